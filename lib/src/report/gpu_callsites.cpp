// GPU time by Python call site: op -> launch call (correlation id) -> the launching thread's
// sample nearest the launch -> the Python line. CUPTI's thread ids are system thread ids
// (the injection asks for CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), the sampler's native tids.
// A launch from a thread that runs no Python (torch's autograd engine) goes to the nearest moment
// a thread of the same process was seen waiting in torch.autograd.

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "report/launch_calls.hpp"
#include "sprof/gpu_report.hpp"
#include "sprof/profile_samples.hpp"

namespace sprof::report {
namespace {

struct ThreadSample {
  int64_t time_ns = 0;
  int64_t weight_ns = 0;
  uint32_t stack = 0;
};

struct Site {
  std::string file;
  int32_t line = 0;
  std::string function;
  std::string why;
  bool operator<(const Site& o) const { return std::tie(file, line, function, why) < std::tie(o.file, o.line, o.function, o.why); }
};

// Library code: the standard library and installed packages. The user's code is the rest.
bool library_file(std::string_view file) {
  return file.find("/site-packages/") != std::string_view::npos || file.find("/dist-packages/") != std::string_view::npos ||
         file.find("/lib/python") != std::string_view::npos || file.rfind("<frozen", 0) == 0 || file.empty() ||
         file.front() == '<';
}

uint64_t thread_key(int32_t pid, int32_t tid) { return (uint64_t(uint32_t(pid)) << 32) | uint32_t(tid); }

}  // namespace

Result<std::vector<CallSite>> call_sites(const GpuInput& input, const GpuSelection& selection,
                                         const CallSiteOptions& options) {
  if (!input.profile) {
    return make_error(ErrorKind::usage, "callsites needs a profile directory recorded by sprof (samples give the Python "
                                        "lines); a trace file has none");
  }
  SPROF_TRY(const store::ProfileSamples* samples, input.profile->samples());
  const store::ProfileSamples& profile = *samples;

  LaunchCalls calls(input.trace);
  std::unordered_map<int32_t, bool> wanted_pids;
  for (const store::GpuApiCall& call : input.trace.api_calls) {
    if (call.correlation != 0) wanted_pids[call.pid] = true;
  }

  // The samples of every thread of the processes that launched GPU work, per (pid, tid), in
  // time order: the launching threads', and the others' for launches from threads that run no
  // Python (below).
  struct ThreadSamples {
    const store::SampleLog* log = nullptr;
    std::vector<ThreadSample> samples;
  };
  std::unordered_map<uint64_t, ThreadSamples> threads;
  for (const store::ProcessSamples& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (!wanted_pids.count(log.pid())) continue;
    std::vector<int32_t> tid_of(log.threads().size());
    for (size_t i = 0; i < tid_of.size(); ++i) tid_of[i] = log.threads()[i].native_tid;
    log.for_each_sample([&](const store::SampleRecord& r) {
      uint64_t key = thread_key(log.pid(), tid_of[r.thread]);
      ThreadSamples& t = threads[key];
      t.log = &log;
      t.samples.push_back({r.time_ns, r.weight_ns, r.stack});
    });
  }

  // The thread's sample nearest the middle of the call (its frames in `frames`), or why there is
  // none; `no_frames` when the sample had no Python frames.
  std::vector<uint32_t> frames;
  auto nearest = [&](const ThreadSamples& t, const store::GpuApiCall& call, std::string& why,
                     bool& no_frames) -> const ThreadSample* {
    const std::vector<ThreadSample>& s = t.samples;
    int64_t middle = call.start_ns + (call.end_ns - call.start_ns) / 2;
    auto after = std::lower_bound(s.begin(), s.end(), middle, [](const ThreadSample& a, int64_t t) { return a.time_ns < t; });
    const ThreadSample* best = nullptr;
    int64_t best_distance = INT64_MAX;
    for (auto candidate : {after, after == s.begin() ? s.end() : after - 1}) {
      if (candidate == s.end()) continue;
      int64_t distance = std::abs(candidate->time_ns - middle);
      if (distance < best_distance) {
        best = &*candidate;
        best_distance = distance;
      }
    }
    // A sample stands for the interval since the thread's previous tick (its weight): a launch
    // inside the interval of the sample after it was sampled around; elsewhere (before the first
    // sample, after the last, across a pause) only a sample within twice its interval counts.
    bool covered = after != s.end() && after->time_ns - after->weight_ns <= middle && after != s.begin();
    int64_t limit = options.max_distance_ns > 0 ? options.max_distance_ns : 2 * std::max<int64_t>(best->weight_ns, 1'000'000);
    if ((options.max_distance_ns > 0 || !covered) && best_distance > limit) {
      why = "no sample of the launching thread near the launch";
      return nullptr;
    }
    t.log->stack_frames(best->stack, frames);  // leaf first
    if (frames.empty()) {
      why = "the launching thread had no Python frames";
      no_frames = true;
      return nullptr;
    }
    return best;
  };
  // The site of the sample whose frames `frames` holds: the user's innermost frame (or the leaf).
  auto site_of_frames = [&](const store::SampleLog& log) -> Site {
    const store::LogFrame* chosen = &log.frames()[frames.front()];
    if (!options.leaf) {
      for (uint32_t f : frames) {
        const store::LogFrame& frame = log.frames()[f];
        if (!library_file(log.functions()[frame.function].file)) {
          chosen = &frame;
          break;
        }
      }
    }
    const store::LogFunction& function = log.functions()[chosen->function];
    return {function.file, chosen->line, function.name, ""};
  };
  // The moments a thread of each process was seen inside torch.autograd (backward(),
  // autograd.grad()), in time order, with the site of its user frame then.
  struct AutogradWait {
    int64_t time_ns = 0;
    Site site;
  };
  std::unordered_map<int32_t, std::vector<AutogradWait>> autograd_waits;
  for (auto& [key, t] : threads) {
    std::unordered_map<uint32_t, std::optional<Site>> site_of_stack;
    for (const ThreadSample& sample : t.samples) {
      auto [it, fresh] = site_of_stack.try_emplace(sample.stack);
      if (fresh) {
        t.log->stack_frames(sample.stack, frames);
        for (uint32_t f : frames) {
          if (t.log->functions()[t.log->frames()[f].function].file.find("/torch/autograd/") != std::string::npos) {
            it->second = site_of_frames(*t.log);
            break;
          }
        }
      }
      if (it->second) autograd_waits[t.log->pid()].push_back({sample.time_ns, *it->second});
    }
  }
  for (auto& [pid, waits] : autograd_waits) {
    std::sort(waits.begin(), waits.end(), [](const AutogradWait& a, const AutogradWait& b) { return a.time_ns < b.time_ns; });
  }

  std::unordered_map<const store::GpuApiCall*, Site> site_of_call;
  auto site_for = [&](const store::GpuApiCall& call) -> Site {
    uint64_t key = thread_key(call.pid, call.tid);
    std::string why = fmt::format("no samples of the launching thread (pid {}, tid {})", call.pid, call.tid);
    auto it = threads.find(key);
    bool no_frames = it == threads.end();
    if (it != threads.end() && !it->second.samples.empty()) {
      if (nearest(it->second, call, why, no_frames) != nullptr) return site_of_frames(*it->second.log);
    }
    // A thread that runs no Python launching: PyTorch runs the backward pass of CUDA tensors on
    // its autograd engine's device threads while the thread that called backward() waits inside
    // torch.autograd. The launch goes to the nearest moment, however far, at which a thread of
    // the process was seen waiting there: a backward pass is often shorter than a sampling
    // interval, and a training loop calls backward() from the same line step after step.
    auto waits = autograd_waits.find(call.pid);
    if (no_frames && waits != autograd_waits.end()) {
      const std::vector<AutogradWait>& w = waits->second;
      int64_t middle = call.start_ns + (call.end_ns - call.start_ns) / 2;
      auto after = std::lower_bound(w.begin(), w.end(), middle, [](const AutogradWait& a, int64_t t) { return a.time_ns < t; });
      if (after == w.end() || (after != w.begin() && middle - (after - 1)->time_ns < after->time_ns - middle)) --after;
      return after->site;
    }
    return {"", 0, "", why};
  };

  struct Acc {
    int64_t gpu_ns = 0, kernels = 0, copies = 0;
    std::map<const store::GpuApiCall*, bool> launches;
    std::map<std::string_view, CallSiteKernel> kernel_names;
  };
  std::map<Site, Acc> by_site;
  int64_t all = 0;
  for (const store::GpuOp& op : input.trace.ops) {
    if ((selection.device && op.device != *selection.device) || !selection.contains(op.start_ns)) continue;
    Site site;
    const store::GpuApiCall* call = calls.of(op);
    if (call == nullptr) {
      site.why = "no launch call recorded for it";
    } else {
      auto cached = site_of_call.find(call);
      if (cached == site_of_call.end()) cached = site_of_call.emplace(call, site_for(*call)).first;
      site = cached->second;
    }
    Acc& acc = by_site[site];
    acc.gpu_ns += op.duration_ns();
    all += op.duration_ns();
    if (call != nullptr) acc.launches[call] = true;
    if (op.kind == store::GpuOpKind::kernel) {
      ++acc.kernels;
      CallSiteKernel& k = acc.kernel_names[op.name];
      k.name = std::string(op.name);
      k.total_ns += op.duration_ns();
      ++k.count;
    } else {
      ++acc.copies;
    }
  }

  std::vector<CallSite> out;
  for (auto& [site, acc] : by_site) {
    CallSite row;
    row.file = site.file;
    row.line = site.line;
    row.function = site.function;
    row.why_unattributed = site.why;
    row.gpu_ns = acc.gpu_ns;
    row.share = all > 0 ? double(acc.gpu_ns) / double(all) : 0;
    row.kernels = acc.kernels;
    row.copies = acc.copies;
    row.launches = int64_t(acc.launches.size());
    for (auto& [name, k] : acc.kernel_names) row.top_kernels.push_back(k);
    std::sort(row.top_kernels.begin(), row.top_kernels.end(),
              [](const CallSiteKernel& a, const CallSiteKernel& b) { return a.total_ns > b.total_ns; });
    if (row.top_kernels.size() > 3) row.top_kernels.resize(3);
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) {
    if (a.gpu_ns != b.gpu_ns) return a.gpu_ns > b.gpu_ns;
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  return out;
}

}  // namespace sprof::report
