// `sprof diff`: two sides read as analyze and the GPU views read them, then compared step by step.
// Steps are the units every interval is taken over: a step's duration, a function's sampled time
// in the step (each sample's time split across the steps it overlaps), a kernel's time in the
// step. Samples of one call are not independent draws (a 30 ms call sampled at 1 kHz gives 30
// samples or none), so an interval over samples, as a binomial one, is too narrow and raises
// false alarms; one over steps carries the real noise.

#include "sprof/profile_diff.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rules/numeric.hpp"
#include "sprof/analyze.hpp"
#include "sprof/gpu_report.hpp"
#include "sprof/profile_samples.hpp"
#include "report/analyze_parts.hpp"
#include "report/step_spans.hpp"
#include "sprof/trace_events.hpp"

namespace fs = std::filesystem;

namespace sprof::report {
namespace {

struct FunctionSums {
  std::string name, file;
  int32_t line = 0;
  Moments self, total;  // over the selected steps
  int64_t index = -1;   // in read_functions' table
};

struct KernelSums {
  Moments time;
  double launches = 0;
};

struct GpuSide {
  std::map<std::string, KernelSums> kernels;
  Moments kernel_total;
  double steps = 0;
  double idle_share = 0;
  double launch_delay_us = 0;
};

// A flame graph under construction: frame name -> subtree.
struct FlameBuild {
  double base_s = 0, new_s = 0;
  std::map<std::string, FlameBuild> children;
};

struct SideData {
  DiffSide side;
  std::vector<double> step_s, iteration_s, wait_s;
  std::map<std::string, FunctionSums> functions;  // by file "\n" name
  Moments sampled;
  std::vector<std::pair<std::vector<std::string>, double>> stacks;  // root first, seconds in all steps
  std::optional<GpuSide> gpu;
  std::string gpu_note;
  std::vector<SystemUsageRow> system;
  std::vector<rules::RuleResult> rules;
  std::vector<std::string> warnings;  // files the readers skipped
};

bool is_trace_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::string name = path.filename().string();
  return name.ends_with(".json") || name.ends_with(".json.gz");
}

bool in_range(const DiffSideInput& input, int64_t step) {
  return (!input.first_step || step >= *input.first_step) && (!input.last_step || step <= *input.last_step);
}

std::string range_text(const DiffSideInput& input) {
  if (!input.first_step && !input.last_step) return "";
  return fmt::format(" in steps {}-{}", input.first_step ? std::to_string(*input.first_step) : "",
                     input.last_step ? std::to_string(*input.last_step) : "");
}

// The step threads' samples in the selected steps, summed per function and step: each sample's
// time split across the steps it overlaps (step_spans.hpp), so a function never has more time in
// a step than the step lasted.
// (smdebug's own directories have steps and no samples: the other sections still compare.)
// The sums read_functions adds samples into, one profile (or one node of a job) at a time.
struct FunctionSteps {
  explicit FunctionSteps(size_t steps) : sampled(steps, 0) {}
  std::vector<double> sampled;           // per step
  std::vector<FunctionSums*> functions;  // by the side's function index
  std::unordered_map<uint64_t, std::pair<double, double>> per_step;  // (function, step) -> self, total seconds
};

// Adds one profile's samples. `host`: a job's node, whose steps are those whose node id names it
// (pids repeat across nodes); empty: every step.
void read_functions(const store::ProfileSamples& samples, const std::vector<const StepRecord*>& steps,
                    const TimeView& view, const std::string& host, FunctionSteps& acc, SideData& data) {
  if (samples.processes.empty() || !samples.manifest) return;
  data.side.has_samples = true;
  const store::Manifest& manifest = *samples.manifest;
  std::map<int64_t, std::vector<StepSpan>> spans;  // by pid, by begin
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!host.empty() && store::split_node_id(steps[i]->node).host != host) continue;
    spans[steps[i]->pid].push_back(
        {manifest.to_monotonic_ns(steps[i]->start_us), manifest.to_monotonic_ns(steps[i]->end_us), int64_t(i)});
  }
  for (auto& [pid, w] : spans) std::sort(w.begin(), w.end(), [](const StepSpan& a, const StepSpan& b) { return a.begin_ns < b.begin_ns; });
  std::vector<double>& sampled = acc.sampled;
  std::vector<FunctionSums*>& functions = acc.functions;
  auto& per_step = acc.per_step;
  const SampleFilter filter = time_view_filter(view, samples);
  std::vector<uint32_t> frames;
  for (const store::ProcessSamples& p : samples.processes) {
    const store::SampleLog& log = p.log;
    auto w = spans.find(log.pid());
    if (w == spans.end()) continue;
    std::vector<int64_t> function_of(log.functions().size(), -1);
    std::vector<uint64_t> seen(log.functions().size(), 0);
    std::map<std::pair<uint32_t, bool>, double> stack_seconds;  // (stack, idle)
    uint64_t sample_index = 0;
    const std::vector<bool> mask = filter.thread_mask(log);
    log.for_each_sample([&](const store::SampleRecord& r) {
      if (!filter.keeps(r, mask)) return;
      log.stack_frames(r.stack, frames);  // leaf first
      split_sample(w->second, r.time_ns, r.weight_ns, [&](const StepSpan& span, int64_t overlap_ns) {
        const double seconds = double(overlap_ns) / 1e9;
        sampled[size_t(span.unit)] += seconds;
        stack_seconds[{r.stack, r.idle() && !view.on_cpu}] += seconds;
        ++sample_index;
        for (size_t i = 0; i < frames.size(); ++i) {
          const uint32_t fn = log.frames()[frames[i]].function;
          if (function_of[fn] < 0) {
            const store::LogFunction& f = log.functions()[fn];
            FunctionSums& sums = data.functions[f.file + "\n" + f.name];
            if (sums.index < 0) {
              sums.name = f.name;
              sums.file = f.file;
              sums.line = f.first_line;
              sums.index = int64_t(functions.size());
              functions.push_back(&sums);
            }
            function_of[fn] = sums.index;
          }
          auto& [self, total] = per_step[(uint64_t(function_of[fn]) << 32) | uint64_t(span.unit)];
          if (i == 0) self += seconds;
          if (seen[fn] != sample_index) {  // once per sample, however deep the recursion
            seen[fn] = sample_index;
            total += seconds;
          }
        }
      });
    });
    for (const auto& [stack, seconds] : stack_seconds) {
      log.stack_frames(stack.first, frames);
      std::vector<std::string> names;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        const store::LogFunction& f = log.functions()[log.frames()[*it].function];
        names.push_back(f.name + " (" + f.file + ")");
      }
      if (stack.second) names.push_back(kWaitingFrame);
      data.stacks.emplace_back(std::move(names), seconds);
    }
  }
}

// The per-step moments of what read_functions added up.
void finish_functions(const FunctionSteps& acc, size_t steps, SideData& data) {
  if (!data.side.has_samples) return;
  for (const auto& [key, sums] : acc.per_step) {
    FunctionSums& f = *acc.functions[key >> 32];
    f.self.add(sums.first);
    f.total.add(sums.second);
  }
  for (double s : acc.sampled) data.sampled.add(s);
  data.side.sampled_s_per_step = data.sampled.mean();
  for (auto& [key, sums] : data.functions) {  // the steps without the function count as zeros
    sums.self.n = sums.total.n = double(steps);
  }
}

// Kernels per selected step, each counted in the step whose iteration (the step and the wait
// before it, GpuStepWindow::iteration_start_ns) holds its start in the process that launched it:
// GPU work launched between steps (input copies, what follows optimizer.step()) counts too, as in
// HTA's TraceDiff over ProfilerStep#N.
void read_gpu(Result<GpuInput> loaded, Mode mode, const DiffSideInput& input, bool trace_file, SideData& data) {
  if (!loaded.ok()) {
    data.gpu_note = loaded.error().message;
    return;
  }
  const GpuInput& gpu = *loaded;
  struct Unit {
    int32_t pid;  // 0: any process (a trace's ProfilerStep#N)
    int64_t start_ns, end_ns;
    auto operator<=>(const Unit&) const = default;
  };
  std::vector<Unit> units;
  for (const GpuStepWindow& s : gpu.steps) {
    if ((trace_file || s.mode == mode) && in_range(input, s.step)) units.push_back({s.pid, s.iteration_start_ns, s.end_ns});
  }
  std::sort(units.begin(), units.end());
  // A trace without ProfilerStep#N is one unit: its totals compare, without intervals.
  if (units.empty() && trace_file && gpu.steps.empty() && !input.first_step && !input.last_step) {
    units.push_back({0, INT64_MIN, INT64_MAX});
  }
  if (units.empty()) {
    data.gpu_note = fmt::format("{}: no {} step{} in its GPU trace", input.path.string(), trace_file ? "ProfilerStep#" : to_string(mode),
                                range_text(input));
    return;
  }
  const bool any_process = units.front().pid == 0;
  GpuSide side;
  side.steps = double(units.size());
  GpuSelection selection;
  for (const Unit& u : units) selection.windows.emplace_back(u.start_ns, u.end_ns);
  std::sort(selection.windows.begin(), selection.windows.end());
  struct Entry {
    std::string_view kernel;
    size_t unit;
    int64_t ns;
  };
  std::vector<Entry> entries;
  std::vector<double> per_step(units.size(), 0);
  for (const store::GpuOp& op : gpu.trace.ops) {
    if (op.kind != store::GpuOpKind::kernel) continue;
    const int32_t pid = any_process ? 0 : op.pid;
    auto after = std::upper_bound(units.begin(), units.end(), Unit{pid, op.start_ns, INT64_MAX});
    if (after == units.begin()) continue;
    const Unit& unit = *(after - 1);
    if (unit.pid != pid || op.start_ns >= unit.end_ns) continue;
    const size_t index = size_t(after - units.begin() - 1);
    entries.push_back({op.name, index, op.duration_ns()});
    per_step[index] += double(op.duration_ns()) / 1e9;
  }
  for (double s : per_step) side.kernel_total.add(s);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.kernel != b.kernel ? a.kernel < b.kernel : a.unit < b.unit;
  });
  for (size_t i = 0; i < entries.size();) {
    KernelSums& k = side.kernels[std::string(entries[i].kernel)];
    size_t j = i;
    while (j < entries.size() && entries[j].kernel == entries[i].kernel) {
      double step_s = 0;
      size_t unit = entries[j].unit;
      for (; j < entries.size() && entries[j].kernel == entries[i].kernel && entries[j].unit == unit; ++j) {
        step_s += double(entries[j].ns) / 1e9;
        k.launches += 1;
      }
      k.time.add(step_s);
    }
    k.time.n = side.steps;
    i = j;
  }
  int64_t span = 0, idle = 0;
  for (const BreakdownRow& row : temporal_breakdown(gpu, selection, false)) {
    span += row.span_ns;
    idle += row.idle_ns;
  }
  side.idle_share = span > 0 ? double(idle) / double(span) : 0;
  int64_t most = -1;
  for (const LaunchSummary& l : launch_summary(gpu, selection, LaunchOptions{})) {
    if (l.launches > most) {
      most = l.launches;
      side.launch_delay_us = l.delay.median_ns / 1e3;
    }
  }
  data.side.has_gpu = true;
  data.gpu = std::move(side);
}

Result<SideData> read_side(const DiffSideInput& input, const DiffOptions& options, const char* which) {
  SideData data;
  data.side.path = input.path.string();
  if (is_trace_file(input.path)) {
    data.side.trace_file = true;
    read_gpu(load_gpu_input(store::ProfilePath(input.path, input.source)), options.mode, input, true, data);
    if (!data.gpu) return make_error(ErrorKind::bad_input, "{} {}: {}", which, input.path.string(), data.gpu_note);
    data.side.steps = size_t(data.gpu->steps);
    return data;
  }
  if (store::ProfilePath(input.path, input.source).files().kind(input.path) == store::FileKind::missing) {
    return make_error(ErrorKind::bad_input, "{} {}: no such file or directory", which, input.path.string());
  }
  SPROF_TRY(query::Profile profile, query::Profile::open(store::ProfilePath(input.path, input.source)));
  SPROF_TRY(AnalyzeReport report, analyze(profile, AnalyzeOptions::figures_only()));
  // sprof's own profiles have samples (analyze has read them); smdebug's none.
  const store::ProfileSamples* samples = nullptr;
  if (profile.contents().sprof()) {
    SPROF_TRY(samples, profile.samples());
  }
  const std::string mode_key(mode_key_name(options.mode));
  std::vector<const StepRecord*> steps;
  for (const StepRecord& s : report.steps) {
    if (s.mode != mode_key) continue;
    const std::optional<int64_t> step = s.number();
    if (!step || !in_range(input, *step)) continue;
    const int64_t number = *step;
    if (steps.empty()) data.side.first_step = data.side.last_step = number;
    data.side.first_step = std::min<int64_t>(data.side.first_step, number);
    data.side.last_step = std::max<int64_t>(data.side.last_step, number);
    steps.push_back(&s);
    data.step_s.push_back(s.seconds());
    if (s.wait_s) {
      data.wait_s.push_back(*s.wait_s);
      data.iteration_s.push_back(*s.wait_s + s.seconds());
    }
  }
  for (const StepRecord& s : report.partial_steps) data.side.partial_steps += s.mode == mode_key ? 1 : 0;
  data.side.steps = steps.size();
  if (steps.empty()) {
    return make_error(ErrorKind::bad_input, "{} {}: no {} steps{}{}", which, input.path.string(), to_string(options.mode),
                      range_text(input), report.steps_note.empty() ? "" : " (" + report.steps_note + ")");
  }
  FunctionSteps functions(steps.size());
  if (samples) {
    read_functions(*samples, steps, options.time_view, "", functions, data);
  } else {
    // A job of several nodes: each node's samples in turn, for that node's steps.
    for (query::Profile& held : profile.nodes()) {
      const query::Profile node = std::move(held);  // its samples go at the end of its turn
      auto loaded = node.samples();
      if (!loaded.ok()) {
        data.warnings.push_back(fmt::format("no functions from {}: {}", node.dir().string(), loaded.error().message));
        spdlog::warn("{}", data.warnings.back());
        continue;
      }
      const store::ProfileSamples& node_samples = **loaded;
      if (node_samples.manifest) {
        read_functions(node_samples, steps, options.time_view, node_samples.manifest->host, functions, data);
      }
    }
  }
  finish_functions(functions, steps.size(), data);
  read_gpu(load_gpu_input(profile), options.mode, input, false, data);
  data.system = report.system;
  data.rules = report.rules;
  data.warnings.insert(data.warnings.begin(), report.warnings.begin(), report.warnings.end());
  data.side.has_gpu = data.gpu.has_value();
  return data;
}

DistributionChange distribution(const std::string& metric, const std::vector<double>& base, const std::vector<double>& next,
                                const DiffOptions& options) {
  DistributionChange d;
  d.metric = metric;
  d.base_count = base.size();
  d.new_count = next.size();
  d.base_median_s = rules::median(base);
  d.new_median_s = rules::median(next);
  d.base_p90_s = rules::quantile(base, 0.9);
  d.new_p90_s = rules::quantile(next, 0.9);
  d.change_s = d.new_median_s - d.base_median_s;
  d.change_pct = d.base_median_s > 0 ? d.change_s / d.base_median_s * 100 : 0;
  d.interval_s = bootstrap_median_difference(base, next, options.confidence, options.resamples);
  d.p_value = mann_whitney_p(base, next);
  return d;
}

FlameDiffNode flame_of(const std::string& name, const FlameBuild& b) {
  FlameDiffNode n{name, b.base_s, b.new_s, {}};
  for (const auto& [child, sub] : b.children) n.children.push_back(flame_of(child, sub));
  return n;
}

template <typename T>
void sort_by_change(std::vector<T>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const T& a, const T& b) { return std::abs(a.change_s) > std::abs(b.change_s); });
}

}  // namespace

Result<ProfileDiff> diff_profiles(const DiffOptions& options) {
  SPROF_TRY(SideData base, read_side(options.base, options, "BASE"));
  SPROF_TRY(SideData next, read_side(options.next, options, "NEW"));
  ProfileDiff diff;
  diff.base = base.side;
  diff.next = next.side;
  diff.mode = options.mode;
  diff.confidence = options.confidence;
  diff.time_view = options.time_view.describe();
  for (const std::string& w : base.warnings) diff.warnings.push_back("BASE: " + w);
  for (const std::string& w : next.warnings) diff.warnings.push_back("NEW: " + w);

  if (!base.step_s.empty() && !next.step_s.empty()) {
    diff.steps.push_back(distribution("step", base.step_s, next.step_s, options));
    if (!base.iteration_s.empty() && !next.iteration_s.empty()) {
      diff.steps.push_back(distribution("iteration", base.iteration_s, next.iteration_s, options));
      diff.steps.push_back(distribution("input wait", base.wait_s, next.wait_s, options));
    }
  } else {
    diff.steps_note = "step times need two profiles (a Chrome trace has only its GPU work)";
  }

  const double base_step_s = diff.steps.empty() ? 0 : diff.steps.front().base_median_s;
  if (base.side.has_samples && next.side.has_samples) {
    std::map<std::string, FunctionChange> rows;
    auto row = [&](const std::string& key, const FunctionSums& f) -> FunctionChange& {
      FunctionChange& r = rows[key];
      r.name = f.name;
      r.file = f.file;
      r.line = f.line;
      return r;
    };
    for (const auto& [key, f] : base.functions) {
      FunctionChange& r = row(key, f);
      r.base_self_s = f.self.mean();
      r.base_total_s = f.total.mean();
    }
    for (const auto& [key, f] : next.functions) {
      FunctionChange& r = row(key, f);
      r.new_self_s = f.self.mean();
      r.new_total_s = f.total.mean();
    }
    Moments none_base, none_next;
    none_base.n = double(base.side.steps);
    none_next.n = double(next.side.steps);
    for (auto& [key, r] : rows) {
      auto b = base.functions.find(key);
      auto n = next.functions.find(key);
      const Moments& mb = b != base.functions.end() ? b->second.self : none_base;
      const Moments& mn = n != next.functions.end() ? n->second.self : none_next;
      r.status = b == base.functions.end() ? "new" : n == next.functions.end() ? "vanished" : "";
      r.change_s = r.new_self_s - r.base_self_s;
      r.interval_s = welch_difference(mb, mn, options.confidence);
      r.total_change_s = r.new_total_s - r.base_total_s;
      r.total_interval_s = welch_difference(b != base.functions.end() ? b->second.total : none_base,
                                            n != next.functions.end() ? n->second.total : none_next, options.confidence);
      r.change_pct_of_step = base_step_s > 0 ? r.change_s / base_step_s * 100 : 0;
      r.base_share = base.sampled.mean() > 0 ? r.base_self_s / base.sampled.mean() : 0;
      r.new_share = next.sampled.mean() > 0 ? r.new_self_s / next.sampled.mean() : 0;
      diff.functions.push_back(std::move(r));
    }
    sort_by_change(diff.functions);
    FlameBuild root;
    for (bool is_new : {false, true}) {
      const SideData& side = is_new ? next : base;
      const double steps = double(side.side.steps);
      for (const auto& [names, seconds] : side.stacks) {
        FlameBuild* node = &root;
        (is_new ? node->new_s : node->base_s) += seconds / steps;
        for (const std::string& name : names) {
          node = &node->children[name];
          (is_new ? node->new_s : node->base_s) += seconds / steps;
        }
      }
    }
    diff.flame = flame_of("all", root);
  } else {
    const DiffSide& without = !base.side.has_samples ? base.side : next.side;
    diff.functions_note = fmt::format("{}: {}", !base.side.has_samples ? "BASE" : "NEW",
                                      without.trace_file ? "a Chrome trace holds no samples" : "no samples in the steps");
  }

  if (base.gpu && next.gpu) {
    GpuDiff& g = diff.gpu;
    g.present = true;
    g.base_kernel_s = base.gpu->kernel_total.mean();
    g.new_kernel_s = next.gpu->kernel_total.mean();
    g.base_idle_share = base.gpu->idle_share;
    g.new_idle_share = next.gpu->idle_share;
    g.base_launch_delay_us = base.gpu->launch_delay_us;
    g.new_launch_delay_us = next.gpu->launch_delay_us;
    std::map<std::string, KernelChange> rows;
    Moments none_base, none_next;
    none_base.n = base.gpu->steps;
    none_next.n = next.gpu->steps;
    for (const auto& [name, k] : base.gpu->kernels) {
      KernelChange& r = rows[name];
      r.base_s = k.time.mean();
      r.base_count = k.launches / base.gpu->steps;
    }
    for (const auto& [name, k] : next.gpu->kernels) {
      KernelChange& r = rows[name];
      r.new_s = k.time.mean();
      r.new_count = k.launches / next.gpu->steps;
    }
    for (auto& [name, r] : rows) {
      auto b = base.gpu->kernels.find(name);
      auto n = next.gpu->kernels.find(name);
      r.name = name;
      r.status = b == base.gpu->kernels.end() ? "new" : n == next.gpu->kernels.end() ? "vanished" : "";
      r.change_s = r.new_s - r.base_s;
      r.interval_s = welch_difference(b != base.gpu->kernels.end() ? b->second.time : none_base,
                                      n != next.gpu->kernels.end() ? n->second.time : none_next, options.confidence);
      r.change_pct = g.base_kernel_s > 0 ? r.change_s / g.base_kernel_s * 100 : 0;
      g.kernels.push_back(std::move(r));
    }
    sort_by_change(g.kernels);
  } else {
    diff.gpu.note = !base.gpu_note.empty() && !next.gpu_note.empty() ? "neither side holds GPU activity"
                    : !base.gpu ? "BASE: " + base.gpu_note
                                : "NEW: " + next.gpu_note;
  }

  for (const SystemUsageRow& b : base.system) {
    for (const SystemUsageRow& n : next.system) {
      if (b.node == n.node && b.metric == n.metric) {
        diff.system.push_back({b.machine, b.metric, b.unit, b.mean, n.mean});
      }
    }
  }
  // A Chrome trace runs no rules: against one, every verdict would read as vanished.
  if (base.side.trace_file || next.side.trace_file) return diff;
  std::map<std::string, RuleChange> verdicts;
  for (const rules::RuleResult& r : base.rules) verdicts[r.rule].base_status = to_string(r.status);
  for (const rules::RuleResult& r : next.rules) verdicts[r.rule].new_status = to_string(r.status);
  for (auto& [rule, v] : verdicts) {
    if (v.base_status != v.new_status) diff.rules.push_back({rule, v.base_status, v.new_status});
  }
  return diff;
}

std::vector<Regression> regressions(const ProfileDiff& diff, const RegressionThresholds& thresholds) {
  std::vector<Regression> out;
  auto check = [&](const char* kind, const std::string& what, double pct, const std::optional<double>& threshold,
                   const ConfidenceInterval& interval) {
    if (threshold && pct > *threshold && interval.lo > 0) out.push_back({kind, what, pct, *threshold, interval});
  };
  double iteration_s = 0;
  for (const DistributionChange& d : diff.steps) {
    if (d.metric == "iteration") iteration_s = d.base_median_s;
  }
  for (const DistributionChange& d : diff.steps) {
    if (d.metric == "input wait") {
      // Of the iteration: a wait of 70 µs that grows to 80 µs is +14 % of itself and nothing to the loop.
      check("input_wait", d.metric, iteration_s > 0 ? d.change_s / iteration_s * 100 : 0, thresholds.input_wait, d.interval_s);
    } else {
      check(d.metric.c_str(), d.metric, d.change_pct, d.metric == "step" ? thresholds.step : thresholds.iteration, d.interval_s);
    }
  }
  for (const FunctionChange& f : diff.functions) {
    check("function", f.name + " (" + f.file + ")", f.change_pct_of_step, thresholds.function, f.interval_s);
  }
  for (const KernelChange& k : diff.gpu.kernels) check("kernel", k.name, k.change_pct, thresholds.kernel, k.interval_s);
  return out;
}

}  // namespace sprof::report
