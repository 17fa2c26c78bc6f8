// A job of several nodes as a job's prefix holds it (remote/job_layout.hpp: each node's profile
// under nodes/<host>/, their step timelines and system metrics also at the top, which is what the
// rest of analyze reads): its functions come from every node's samples, read one node at a time
// so that memory holds one node's sample logs, not the job's.

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "report/analyze_parts.hpp"
#include "report/function_table.hpp"
#include "report/window_functions.hpp"
#include "sprof/open_profile.hpp"

namespace sprof::report {

void summarize_job_nodes(std::vector<query::Profile> nodes, const AnalyzeOptions& options, AnalyzeReport& report,
                         std::vector<StepRecord>& slowest) {
  FunctionTable all;
  std::vector<FunctionTable> phases(report.phases.size());
  std::vector<bool> step_read(slowest.size(), false);
  SampleSummary& total = report.samples;
  int64_t first_us = INT64_MAX, last_us = INT64_MIN;
  std::set<std::string> versions(report.job.python_versions.begin(), report.job.python_versions.end());
  for (query::Profile& held : nodes) {
    const query::Profile node = std::move(held);  // its samples go at the end of the iteration
    auto loaded = node.samples();
    if (!loaded.ok()) {
      report.warnings.push_back(fmt::format("no functions from {}: {}", node.dir().string(), loaded.error().message));
      spdlog::warn("{}", report.warnings.back());
      continue;
    }
    const store::ProfileSamples& samples = **loaded;
    if (!samples.manifest) continue;
    const store::Manifest& m = *samples.manifest;
    ++report.job.node_profiles;
    report.job.node_processes += m.processes.size();
    for (const auto& p : m.processes) {
      if (!p.python_version.empty()) versions.insert(p.python_version);
    }
    const SampleFilter filter = time_view_filter(options.time_view, step_threads_of(samples));

    FunctionTable table;
    const SampleSummary s = summarize_into(samples, filter, table);
    all.merge(table);
    total.samples += s.samples;
    total.idle_samples += s.idle_samples;
    total.invalid += s.invalid;
    total.processes += s.processes;
    total.threads += s.threads;
    for (const auto& p : samples.processes) {
      if (p.log.sample_count() == 0) continue;
      first_us = std::min(first_us, m.to_epoch_us(p.log.first_ns()));
      last_us = std::max(last_us, m.to_epoch_us(p.log.last_ns()));
    }
    for (size_t i = 0; i < report.phases.size(); ++i) {
      add_window_functions(samples, filter, m.to_monotonic_ns(report.phases[i].start_us),
                           m.to_monotonic_ns(report.phases[i].end_us), phases[i]);
    }
    // A step is its process's on its node: the host of the step's node id is this node's.
    for (size_t i = 0; i < slowest.size(); ++i) {
      StepRecord& step = slowest[i];
      if (step_read[i] || store::split_node_id(step.node).host != m.host) continue;
      step_read[i] = true;
      SampleFilter step_filter = filter;
      step_filter.pid = static_cast<int32_t>(step.pid);
      WindowFunctions w = window_functions(samples, step_filter, m.to_monotonic_ns(step.start_us),
                                           m.to_monotonic_ns(step.end_us), options.step_functions);
      step.top = std::move(w.top);
      step.sampled_s = w.kept_s;
    }
  }
  report.job.python_versions.assign(versions.begin(), versions.end());
  if (total.samples == 0) return;
  total.duration_s = double(last_us - first_us) / 1e6;
  const uint64_t attempted = total.samples + total.invalid;
  total.invalid_share = attempted == 0 ? 0.0 : double(total.invalid) / double(attempted);
  total.kept_samples = all.samples();
  total.kept_s = all.seconds();
  total.top = all.top(options.top_functions);
  report.has_samples = true;
  for (size_t i = 0; i < report.phases.size(); ++i) report.phases[i].top = phases[i].top(options.phase_functions);
}

}  // namespace sprof::report
