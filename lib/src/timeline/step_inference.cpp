// --step-fn: training steps inferred from the sampled stacks where no bootstrap could report them.
//
// A step is a maximal run of consecutive samples of one thread whose stack contains a frame of one
// of the step functions (the main thread, or where it never runs one, the thread that runs them
// most: a process has one step sequence); the run ends at the first sample outside them. The step
// begins at the run's first sample and ends at the first sample after it (or the run's last sample
// when the process ends inside it), so each boundary lies up to one sample interval after the
// true one, and two calls with no sample between them (a gap shorter than the sample interval)
// merge into one step. Resolution: one sample interval. markers/step_fn.log carries the bounds as
// a trailing field: "sb <t> ... <time of the sample before>" and "se <t> ... <time of the last
// sample inside>", so the true boundary lies in (bound, t].

#include <algorithm>
#include <map>
#include <system_error>

#include "sprof/profile_samples.hpp"
#include "sprof/step_inference.hpp"

namespace sprof::timeline {
namespace fs = std::filesystem;

bool step_function_matches(std::string_view qualname, std::string_view function_name) {
  if (qualname.empty() || function_name.empty()) return false;
  if (function_name == qualname) return true;
  // "train_step" names the method Trainer.train_step (3.11+ report qualified names).
  if (function_name.size() > qualname.size() && function_name.ends_with(qualname) &&
      function_name[function_name.size() - qualname.size() - 1] == '.') {
    return true;
  }
  // Before 3.11 a frame only knows co_name: "Trainer.train_step" matches "train_step".
  if (function_name.find('.') == std::string_view::npos) {
    size_t dot = qualname.rfind('.');
    if (dot != std::string_view::npos && qualname.substr(dot + 1) == function_name) return true;
  }
  return false;
}

namespace {

// Percent-encoding of a string field (docs/markers.md).
std::string field(std::string_view text) {
  if (text.empty()) return "-";
  if (text == "-") return "%2D";
  std::string out;
  for (unsigned char c : text) {
    if (c <= 0x20 || c == '%' || c == 0x7f) {
      out += fmt::format("%{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int main_thread_of(const store::SampleLog& log, int32_t pid) {
  const auto& threads = log.threads();
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i].native_tid == pid) return static_cast<int>(i);
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i].name == "MainThread") return static_cast<int>(i);
  }
  return threads.empty() ? -1 : 0;
}

struct Run {
  int64_t before_ns = 0;   // the last sample before the run (0: none); the step began after it
  int64_t begin_ns = 0;    // the run's first sample
  int64_t last_in_ns = 0;  // the run's last sample; the step ended after it
  int64_t end_ns = 0;      // the first sample after the run (the last one's time at the end)
  uint64_t outside_before = 0;  // samples outside any step function since the previous run
};

// The runs of every thread of one log, and how many of its samples were inside a step function.
struct ThreadRuns {
  std::vector<Run> runs;
  uint64_t inside = 0;
  uint64_t samples = 0;
  bool in_run = false;
  Run run;
  int64_t previous = 0;
  uint64_t outside = 0;  // samples outside since the last run ended
};

std::vector<ThreadRuns> runs_of(const store::SampleLog& log, const std::vector<std::string>& step_functions) {
  // Per function and per stack id: does it (or, for stacks, any of its frames) match?
  std::vector<char> function_match(log.functions().size(), 0);
  for (size_t i = 0; i < log.functions().size(); ++i) {
    for (const auto& q : step_functions) {
      if (step_function_matches(q, log.functions()[i].name)) function_match[i] = 1;
    }
  }
  const auto& nodes = log.stack_nodes();
  std::vector<signed char> stack_match(nodes.size(), -1);
  if (!stack_match.empty()) stack_match[0] = 0;
  std::vector<uint32_t> path;
  auto matches = [&](uint32_t id) {
    path.clear();
    while (id < nodes.size() && stack_match[id] < 0) {
      path.push_back(id);
      id = nodes[id].parent;
    }
    signed char value = id < nodes.size() ? stack_match[id] : 0;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      uint32_t frame = nodes[*it].frame;
      bool here = frame < log.frames().size() && log.frames()[frame].function < function_match.size() &&
                  function_match[log.frames()[frame].function] != 0;
      value = static_cast<signed char>(value != 0 || here);
      stack_match[*it] = value;
    }
    return value != 0;
  };

  std::vector<ThreadRuns> threads(log.threads().size());
  log.for_each_sample([&](const store::SampleRecord& s) {
    if (s.thread >= threads.size()) return;
    ThreadRuns& t = threads[s.thread];
    ++t.samples;
    if (matches(s.stack)) {
      ++t.inside;
      if (!t.in_run) {
        t.in_run = true;
        t.run.before_ns = t.previous;
        t.run.begin_ns = s.time_ns;
        t.run.outside_before = t.outside;
      }
      t.run.last_in_ns = s.time_ns;
    } else {
      if (t.in_run) {
        t.run.end_ns = s.time_ns;
        t.runs.push_back(t.run);
        t.in_run = false;
        t.outside = 0;
      }
      ++t.outside;
    }
    t.previous = s.time_ns;
  });
  for (ThreadRuns& t : threads) {
    if (t.in_run) {
      t.run.end_ns = t.run.last_in_ns;
      t.runs.push_back(t.run);
    }
  }
  return threads;
}

// The thread that drives a process's steps: its main thread when that ever ran a step function
// (the usual training loop), else the thread with the most samples inside one (a loop run on a
// worker thread); -1 when none did. A process has one step sequence (docs/markers.md).
int step_thread_of(const store::SampleLog& log, int32_t pid, const std::vector<ThreadRuns>& threads) {
  int main = main_thread_of(log, pid);
  if (main >= 0 && static_cast<size_t>(main) < threads.size() && threads[main].inside > 0) return main;
  int best = -1;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i].inside > 0 && (best < 0 || threads[i].inside > threads[best].inside)) best = static_cast<int>(i);
  }
  return best;
}

Mode mode_at(const ProcessTimeline* known, int64_t t_ns, Mode default_mode) {
  Mode mode = default_mode;
  if (known == nullptr) return mode;
  for (const auto& change : known->mode_changes) {
    if (change.t_ns <= t_ns) mode = change.mode;
  }
  return mode == Mode::global ? default_mode : mode;
}

// Back-to-back calls with no sample between them merge into one step: likely when a process has
// few steps that hold most of its step thread's samples, or a step far longer than the median.
// "Few" includes up to 5 runs when each gap between them is a single sample: back-to-back calls
// leave the function for a few µs per ms-long call (a loop's bookkeeping), so a sample lands
// outside at most about once per 200 samples (~0.5 %); 100 samples inside give Poisson(0.5) such
// strays, and 5 or more of them (6 runs, past this bound) come once in ~4,000 recordings. Steps
// separated by real gaps longer than two sampling periods show two or more samples in each gap.
std::string merge_warning(int32_t pid, const ThreadRuns& t, const std::string& names) {
  const auto& runs = t.runs;
  if (runs.empty()) return {};
  std::vector<int64_t> durations;
  for (const Run& r : runs) durations.push_back(r.end_ns - r.begin_ns);
  std::vector<int64_t> sorted = durations;
  std::sort(sorted.begin(), sorted.end());
  int64_t median = sorted[sorted.size() / 2];
  int64_t longest = sorted.back();
  bool single_sample_gaps = runs.size() <= 5 && std::all_of(runs.begin() + 1, runs.end(), [](const Run& r) {
                              return r.outside_before == 1;
                            });
  bool few = (runs.size() < 3 || single_sample_gaps) && t.samples > 0 && t.inside * 2 > t.samples;
  bool long_one = runs.size() >= 3 && median > 0 && longest > 3 * median;
  if (!few && !long_one) return {};
  return fmt::format("pid {}: calls of {} may have merged: {} step{}, the longest {:.1f} ms (median {:.1f} ms) with no "
                     "sample outside it; launched by sprof record (without --no-inject) every call is one step",
                     pid, names, runs.size(), runs.size() == 1 ? "" : "s", longest / 1e6, median / 1e6);
}

}  // namespace

Result<InferredSteps> infer_steps(const fs::path& profile_dir, const std::vector<std::string>& names,
                                  const StepTimeline& known, Mode default_mode, bool bootstrap_counts) {
  InferredSteps out;
  if (names.empty()) return out;
  // "module:Class.method" is matched by its qualified name: samples do not carry the module.
  std::vector<std::string> step_functions;
  std::string joined;
  for (const auto& name : names) {
    size_t colon = name.find(':');
    step_functions.push_back(colon == std::string::npos ? name : name.substr(colon + 1));
    joined += (joined.empty() ? "" : ", ") + name;
  }
  SPROF_TRY(store::ProfileSamples profile, store::load_profile_samples(profile_dir));
  bool seen_any = false;
  for (const auto& process : profile.processes) {
    const store::SampleLog& log = process.log;
    int32_t pid = log.pid();
    if (pid == 0 || log.processes().empty()) continue;
    const ProcessTimeline* k = known.find(pid);
    if (k != nullptr && !k->steps.empty()) {
      if (!bootstrap_counts) {
        out.notes.push_back(fmt::format("pid {}: left to the {} steps its bootstrap reported", pid, k->steps.size()));
      }
      seen_any = true;
      continue;
    }
    // A process whose bootstrap wrapped the functions counted every call: none means none ran.
    if (k != nullptr && bootstrap_counts) continue;
    std::vector<ThreadRuns> threads = runs_of(log, step_functions);
    int thread = step_thread_of(log, pid, threads);
    if (thread < 0) continue;
    seen_any = true;
    const std::vector<Run>& runs = threads[thread].runs;
    if (thread != main_thread_of(log, pid)) {
      const store::LogThread& t = log.threads()[thread];
      out.notes.push_back(fmt::format("pid {}: its main thread never ran the step function; steps taken from thread "
                                      "{}{}", pid, t.native_tid, t.name.empty() ? "" : " (" + t.name + ")"));
    }

    const int32_t tid = log.threads()[thread].native_tid != 0 ? log.threads()[thread].native_tid : pid;
    if (k == nullptr) {
      // No marker of this process at all: start its timeline where sampling began.
      const store::LogProcess& lp = log.processes().front();
      out.lines += fmt::format("hello {} {} {} 1 {} sampled {} {}\n", lp.attach_ns, pid, tid, lp.ppid,
                               field(lp.python_version), field(lp.executable));
    }
    std::map<Mode, int64_t> mode_steps;
    int64_t global = 0;
    for (const Run& r : runs) {
      Mode mode = mode_at(k, r.begin_ns, default_mode);
      int64_t step = mode_steps[mode]++;
      // A trailing field (ignored by readers, docs/markers.md) bounds each boundary: the step began
      // after the sample before it, and ended after its last sample.
      out.lines += fmt::format("sb {} {} {} {} {} {} {}\n", r.begin_ns, pid, tid, to_string(mode), step, global,
                               r.before_ns);
      out.lines += fmt::format("se {} {} {} {} {} {} {}\n", r.end_ns, pid, tid, to_string(mode), step, global,
                               r.last_in_ns);
      ++global;
    }
    out.steps_per_pid[pid] = static_cast<int64_t>(runs.size());
    if (std::string warning = merge_warning(pid, threads[thread], joined); !warning.empty()) {
      out.notes.push_back(std::move(warning));
    }
  }
  if (!seen_any) {
    out.notes.push_back(bootstrap_counts
                            ? fmt::format("no process called {}: no steps", joined)
                            : fmt::format("no sample of any thread was inside {}: no steps inferred", joined));
  }
  return out;
}

}  // namespace sprof::timeline
