// sprof analyze: gathers the job summary, phases, steps, functions, system usage and rule findings.

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>


#include "report/analyze_parts.hpp"
#include "report/window_functions.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/layout.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/step_timeline.hpp"
#include "sprof/system_metrics.hpp"
#include "sprof/trace_events.hpp"

namespace fs = std::filesystem;

namespace sprof::report {
namespace {

// StepOutlier_stddev from the --param overrides (the rules validate it), else the rule's default.
double outlier_stddev(const rules::RulesOptions& options) {
  const std::string key = "stepoutlier_stddev=";
  for (const auto& p : options.params) {
    if (p.size() <= key.size()) continue;
    std::string head = p.substr(0, key.size());
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (head != key) continue;
    char* end = nullptr;
    double v = std::strtod(p.c_str() + key.size(), &end);
    if (end != nullptr && *end == '\0' && v > 0) return v;
  }
  return 3.0;
}

// The job's machines from every node id it holds: system metrics' (mapped to their host by
// sprof.json), framework events' and sprof.json's processes'.
std::vector<JobMachine> job_machines(const std::set<std::string>& system_nodes, const std::set<std::string>& process_nodes,
                                     const std::map<std::string, std::string>& system_hosts) {
  std::map<std::string, JobMachine> by_host;
  std::map<std::string, std::set<std::string>> processes;  // host -> "<pid>-<host>" (one spelling)
  for (const auto& id : system_nodes) by_host[store::system_node_host(system_hosts, id)].system_node = id;
  std::vector<std::string> hostless;  // ids of digits alone (smdebug's test traces): no host named
  for (const auto& id : process_nodes) {
    store::NodeIdParts parts = store::split_node_id(id);
    if (parts.host.empty()) {
      hostless.push_back(id);
      continue;
    }
    by_host[parts.host];
    if (!parts.process.empty()) processes[parts.host].insert(parts.process + "-" + parts.host);
  }
  // On the job's one machine when it has one; else on a machine of unknown name.
  std::string host = by_host.size() == 1 ? by_host.begin()->first : std::string("(host unknown)");
  for (const auto& id : hostless) {
    by_host[host];
    processes[host].insert(id);
  }
  std::vector<JobMachine> out;
  for (auto& [host, m] : by_host) {
    m.host = host;
    m.processes.assign(processes[host].begin(), processes[host].end());
    out.push_back(std::move(m));
  }
  return out;
}

std::string process_role(const store::ProfileSamples& samples, const store::ManifestProcess& p) {
  const store::Manifest& m = *samples.manifest;
  const store::ManifestProcess* parent = nullptr;
  for (const auto& q : m.processes) {
    if (q.pid == p.ppid) parent = &q;
  }
  if (parent == nullptr || p.pid == m.target_pid) return "main";
  for (const auto& s : samples.processes) {
    if (s.log.pid() != p.pid) continue;
    for (const store::LogFunction& f : s.log.functions()) {
      if (f.name == "_worker_loop" && f.file.ends_with("torch/utils/data/_utils/worker.py")) return "DataLoader worker";
    }
  }
  return p.cmdline == parent->cmdline ? "worker" : "child";
}

void fill_job(const store::ProfileSamples* samples, const std::vector<store::SystemMetric>& system,
              const std::vector<store::TraceEvent>& framework, const std::map<std::string, std::string>& system_hosts,
              JobSummary& job) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  auto widen = [&](int64_t us) {
    first = std::min(first, us);
    last = std::max(last, us);
  };
  for (const auto& m : system) widen(static_cast<int64_t>(m.timestamp * 1e6));
  for (const auto& e : framework) {
    widen(e.start_us);
    widen(e.end_us);
  }
  std::set<std::string> nodes, versions, system_nodes, process_nodes;
  for (const auto& m : system) system_nodes.insert(m.node_id);
  for (const auto& e : framework) process_nodes.insert(e.node_id);
  nodes.insert(system_nodes.begin(), system_nodes.end());
  nodes.insert(process_nodes.begin(), process_nodes.end());
  if (samples != nullptr && samples->manifest) {
    const store::Manifest& m = *samples->manifest;
    job.has_manifest = true;
    job.command = m.command;
    job.state = m.state;
    job.mode = m.mode;
    job.target_pid = m.target_pid;
    job.exit_status = m.exit_status;
    if (m.mode == "attach") {
      for (const auto& p : m.processes) {
        if (p.pid == m.target_pid && job.command.empty()) job.command = p.cmdline;
      }
      // The recording is complete; the process is not, when sprof detached from a live one.
      if (m.state == "complete" && m.running_at_end.value_or(false)) job.state = "running";
    }
    for (const auto& p : samples->processes) {
      if (p.log.sample_count() == 0) continue;
      widen(m.to_epoch_us(p.log.first_ns()));
      widen(m.to_epoch_us(p.log.last_ns()));
    }
    // The recording's own span wins; a cut-short recording (no end) ends at its last data.
    if (m.start_ns != 0) first = m.to_epoch_us(m.start_ns);
    if (m.end_ns != 0) last = m.to_epoch_us(m.end_ns);
    for (const auto& p : m.processes) {
      if (!p.node_id.empty()) process_nodes.insert(p.node_id);
      JobProcess jp{p.pid, p.ppid, p.python_version, p.cmdline, p.samples, p.error, process_role(*samples, p)};
      if (!p.python_version.empty()) versions.insert(p.python_version);
      job.processes.push_back(std::move(jp));
    }
  }
  if (first <= last) {
    job.start_us = first;
    job.end_us = last;
  }
  job.python_versions.assign(versions.begin(), versions.end());
  job.nodes.assign(nodes.begin(), nodes.end());
  job.machines = job_machines(system_nodes, process_nodes, system_hosts);
}

void fill_own_costs(const store::Manifest& m, AnalyzeReport& report) {
  double sampling_s = m.end_ns > m.start_ns ? double(m.end_ns - m.start_ns) / 1e9 : 0;
  auto parts = store::own_costs_section(m);
  auto& costs = report.own_costs;
  if (!parts) {
    // Recorded before the costs were told apart: health.sampler_cpu_s was all of sprof's CPU.
    if (m.health.sampler_cpu_s > 0) costs.push_back({"sprof process", m.health.sampler_cpu_s, sampling_s, false});
    return;
  }
  costs.push_back({"sampler", m.health.sampler_cpu_s, sampling_s, false});
  if (report.sysmon_cpu_share) costs.push_back({"system monitor", *report.sysmon_cpu_share * sampling_s, sampling_s, false});
  // Under a millisecond is what the clock reads around a hook's calls cost by themselves: a hook
  // with nothing to do then still shows that much, so such parts are left out of the report.
  constexpr double kNegligibleCpuS = 0.001;
  for (const auto& part : parts->parts) {
    std::string label = part.name;
    std::replace(label.begin(), label.end(), '_', ' ');
    double during = part.while_sampling_cpu_s;
    // The system monitor's housekeeping calls are a small part of its thread's time, added to it.
    if (label == "system monitor" && report.sysmon_cpu_share) {
      for (auto& c : costs) {
        if (c.name == label) c.cpu_s += during;
      }
    } else if (during >= kNegligibleCpuS) {
      costs.push_back({label, during, sampling_s, false});
    }
    double after = part.after_sampling_cpu_s;
    if (after >= kNegligibleCpuS) costs.push_back({label, after, part.after_sampling_wall_s, true});
  }
}

void fill_sysmon_manifest(const store::Manifest& m, AnalyzeReport& report) {
  auto section = store::system_metrics_section(m);
  if (!section) return;
  if (section->interval_ms) report.system_interval_ms = *section->interval_ms;
  if (section->thread_cpu_s && section->wall_s && *section->wall_s > 0) {
    report.sysmon_cpu_share = *section->thread_cpu_s / *section->wall_s;
  }
}

// Why there are no system metrics: sprof.json says whether the monitor ran and for how long.
std::string system_metrics_missing_note(const store::Manifest* manifest, bool sprof_profile) {
  if (!sprof_profile) return "no system metrics (system/incremental)";
  auto section = manifest != nullptr ? store::system_metrics_section(*manifest) : std::nullopt;
  if (!section) return "no system metrics (recorded with --no-system-metrics)";
  if (!section->error.empty()) return "no system metrics: " + section->error;
  if (section->ticks == 0 && section->interval_ms && section->wall_s) {
    return fmt::format("no system metrics: the job ended ({:.3f} s) before the monitor's first reading (every {} ms)",
                       *section->wall_s, *section->interval_ms);
  }
  return "no system metrics (system/incremental)";
}

// Steps of a profile whose trace was never written (a recording cut short before its end), from the
// persisted markers: the same steps record would have written as Step:ModeKeys events.
Result<std::vector<StepRecord>> steps_from_markers(const query::Profile& profile, const store::Manifest& manifest) {
  SPROF_TRY(const timeline::StepTimeline* timeline, profile.step_timeline());
  std::vector<StepRecord> steps;
  for (const auto& p : timeline->processes) {
    std::string node = std::to_string(p.pid);
    for (const auto& mp : manifest.processes) {
      if (mp.pid == p.pid && !mp.node_id.empty()) node = store::normalize_node_id(mp.node_id);
    }
    for (const auto& s : p.steps) {
      StepRecord r;
      r.node = node;
      r.mode = std::string(mode_key_name(s.mode));
      r.step = std::to_string(s.step);
      r.pid = p.pid;
      r.start_us = manifest.to_epoch_us(s.begin_ns);
      r.end_us = manifest.to_epoch_us(s.end_ns);
      steps.push_back(std::move(r));
    }
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.start_us < b.start_us; });
  return steps;
}

// An attached process was in the middle of a step when sprof attached, and may be when it detached:
// a step that starts by the process's first sample or ends at its last (within two sampling
// periods, the sampler's resolution) is only the part of a step the window saw. Removed from
// `steps`. The samples, not the attach and detach times, mark the window's edges: on a loaded
// machine the first tick can come well after the attach.
std::vector<StepRecord> take_partial_steps(const store::ProfileSamples& samples, std::vector<StepRecord>& steps) {
  const store::Manifest& m = *samples.manifest;
  const int64_t slack_us = m.rate_hz > 0 ? static_cast<int64_t>(2e6 / m.rate_hz) : 20'000;
  const bool ran_on = m.running_at_end.value_or(false);
  std::vector<StepRecord> partial;
  std::vector<StepRecord> whole;
  for (StepRecord& s : steps) {
    bool cut = false;
    for (const auto& p : samples.processes) {
      if (p.log.pid() != s.pid || p.log.sample_count() == 0) continue;
      cut = s.start_us <= m.to_epoch_us(p.log.first_ns()) + slack_us;
      // A process that exited ended its last step itself; one that ran on was cut.
      if (ran_on || p.log.pid() != m.target_pid) cut = cut || s.end_us >= m.to_epoch_us(p.log.last_ns()) - slack_us;
    }
    (cut ? partial : whole).push_back(std::move(s));
  }
  steps = std::move(whole);
  return partial;
}

// The steps by duration, longest first (ties in start order), at most n.
std::vector<StepRecord> slowest_by_duration(const std::vector<StepRecord>& steps, size_t n) {
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a].seconds() > steps[b].seconds(); });
  std::vector<StepRecord> out;
  for (size_t k = 0; k < order.size() && k < n; ++k) out.push_back(steps[order[k]]);
  return out;
}

// The function tables of one profile's samples: the whole run's, each phase's and each of the
// slowest steps' (read as everything else: by default wall time, so waiting shows up too).
void analyze_samples(const store::ProfileSamples* samples, const store::Manifest* manifest,
                     const std::vector<StepRecord>& steps, const AnalyzeOptions& options, AnalyzeReport& report) {
  uint64_t sample_count = 0;
  if (samples != nullptr) {
    for (const auto& p : samples->processes) sample_count += p.log.sample_count();
  }
  if (sample_count == 0) {
    report.samples_note = samples != nullptr ? "the profile holds no samples" : "no raw samples (not recorded by sprof record)";
  } else {
    report.samples = summarize(*samples, time_view_filter(options.time_view, report.step_threads), options.top_functions);
    report.has_samples = true;
    if (report.samples.kept_samples == 0) {
      report.samples_note = options.time_view.on_cpu ? "every sample was idle (leave out --on-cpu)"
                                                     : "no sample of these threads (try --all-threads)";
    }
  }
  std::vector<StepRecord> slowest = slowest_by_duration(steps, options.slowest_steps);
  if (report.has_samples && manifest != nullptr) {
    auto to_ns = [manifest](int64_t epoch_us) { return manifest->to_monotonic_ns(epoch_us); };
    const SampleFilter filter = time_view_filter(options.time_view, report.step_threads);
    for (auto& phase : report.phases) {
      phase.top = window_functions(*samples, filter, to_ns(phase.start_us), to_ns(phase.end_us),
                                   options.phase_functions).top;
    }
    for (StepRecord& s : slowest) {
      SampleFilter step_filter = filter;
      step_filter.pid = static_cast<int32_t>(s.pid);
      WindowFunctions w = window_functions(*samples, step_filter, to_ns(s.start_us), to_ns(s.end_us),
                                           options.step_functions);
      s.top = std::move(w.top);
      s.sampled_s = w.kept_s;
    }
  }
  report.slowest_steps = std::move(slowest);
}

}  // namespace

Result<AnalyzeReport> analyze(const query::Profile& profile, const AnalyzeOptions& options) {
  // Rule names and parameters first, so a typo fails before any reading.
  SPROF_TRY_STATUS(rules::check_rules(options.rules));
  const fs::path& dir = profile.dir();
  const store::ProfileContents& contents = profile.contents();
  bool sprof_profile = contents.sprof();
  if (!contents.profile()) return profile.not_a_profile();

  AnalyzeReport report;
  report.dir = dir;
  report.time_view = options.time_view;
  const store::ProfileSamples* samples = nullptr;
  if (sprof_profile) {
    SPROF_TRY(samples, profile.samples());
  }
  if (samples) report.step_threads = step_threads_of(*samples);
  SPROF_TRY(const std::vector<store::SystemMetric>* system_read, profile.system_metrics());
  const std::vector<store::SystemMetric>& system = *system_read;
  SPROF_TRY(const store::TraceReadResult* trace, profile.trace_events());
  report.warnings = trace->warnings;  // read_trace_events has logged them

  const std::map<std::string, std::string>& system_hosts = profile.system_hosts();
  fill_job(samples, system, trace->events, system_hosts, report.job);

  // Steps and phases.
  report.outlier_stddev = outlier_stddev(options.rules);
  std::vector<StepRecord> steps = collect_steps(trace->events);
  const store::Manifest* manifest = samples && samples->manifest ? &*samples->manifest : nullptr;
  if (steps.empty() && manifest != nullptr && contents.markers) {
    SPROF_TRY(auto from_markers, steps_from_markers(profile, *manifest));
    steps = std::move(from_markers);
    if (!steps.empty()) {
      report.warnings.push_back("steps read from markers/markers.log (no step trace in framework/pevents)");
      spdlog::warn("{}", report.warnings.back());
    }
  }
  if (manifest != nullptr && manifest->mode == "attach") report.partial_steps = take_partial_steps(*samples, steps);
  report.step_stats = step_statistics(steps, report.outlier_stddev);  // marks the outliers
  summarize_iterations(steps, trace->events, samples, options.phase_functions, report);
  report.steps = steps;
  report.phases = job_phases(steps, report.job.start_us, report.job.end_us);
  report.step_skew = step_skew(steps, profile.process_ranks());
  if (steps.empty()) {
    report.steps_note = std::string(timeline::kNoStepsHint) +
                        (contents.framework ? "; no Step:ModeKeys.* events in framework/pevents"
                                            : "; no framework timeline in framework/pevents");
    report.phases_note = "no steps: initialization and finalization cannot be told apart from the training loop";
  }

  // Functions, from the raw samples: the profile's own, or for a job of several nodes each node's.
  // (Not for figures only: their callers, as diff, read the nodes' samples their own way.)
  const bool wants_functions = options.top_functions > 0 || options.phase_functions > 0 || options.slowest_steps > 0;
  std::vector<query::Profile> job_nodes = samples || !wants_functions ? std::vector<query::Profile>() : profile.nodes();
  if (!job_nodes.empty()) {
    std::vector<StepRecord> slowest = slowest_by_duration(steps, options.slowest_steps);
    summarize_job_nodes(std::move(job_nodes), options, report, slowest);
    report.slowest_steps = std::move(slowest);
    if (!report.has_samples) report.samples_note = "no samples in the job's nodes (nodes/*/samples)";
  } else {
    analyze_samples(samples, manifest, steps, options, report);
  }

  // System usage.
  summarize_system(system, report.system_coverage, report.system);
  for (auto& c : report.system_coverage) c.machine = store::system_node_host(system_hosts, c.node);
  for (auto& row : report.system) row.machine = store::system_node_host(system_hosts, row.node);
  if (manifest != nullptr) {
    fill_sysmon_manifest(*manifest, report);
    fill_own_costs(*manifest, report);
  }
  if (system.empty()) {
    report.system_note = system_metrics_missing_note(manifest, sprof_profile);
  }

  std::optional<GpuInput> gpu;
  if (sprof_profile) {
    auto loaded = load_gpu_input(profile);
    if (loaded.ok()) {
      gpu = std::move(*loaded);
      report.gpu = summarize_gpu(*gpu, options);
    } else {
      report.gpu.note = loaded.error().message;
    }
  } else {
    report.gpu.note = "no sprof GPU activity (gpu/): not recorded by sprof record";
  }

  // Rule findings.
  rules::RulesInput input;
  input.profile = profile;
  input.system = system;
  SPROF_TRY(input.framework_events, profile.shared_trace_events());
  input.system_hosts = system_hosts;
  if (gpu) {
    rules::add_kernel_utilization(gpu->trace, gpu->epoch_offset_ns, input);
    report.warnings.insert(report.warnings.end(), input.warnings.begin(), input.warnings.end());
  }
  SPROF_TRY(auto results, rules::run_rules(input, options.rules));
  report.rules = std::move(results);
  return report;
}

}  // namespace sprof::report
