// record's end-of-run summary: totals and the functions with the most self time.

#include <algorithm>
#include <cstdint>

#include "report/function_table.hpp"
#include "sprof/layout.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::report {

SampleSummary summarize(const store::ProfileSamples& profile, const SampleFilter& filter, size_t top_n) {
  FunctionTable table;
  SampleSummary s = summarize_into(profile, filter, table);
  s.top = table.top(top_n);
  return s;
}

SampleSummary summarize_into(const store::ProfileSamples& profile, const SampleFilter& filter, FunctionTable& table) {
  SampleSummary s;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (filter.pid && log.pid() != *filter.pid) continue;
    s.invalid += log.invalid_count();
    if (log.sample_count() > 0) ++s.processes;
    s.threads += log.threads().size();
    FunctionTable::ByStack by_stack;
    const std::vector<bool> mask = filter.thread_mask(log);
    log.for_each_sample([&](const store::SampleRecord& r) {
      ++s.samples;
      first = std::min(first, r.time_ns);
      last = std::max(last, r.time_ns);
      if (r.idle()) ++s.idle_samples;
      if (!filter.keeps(r, mask)) return;
      by_stack[r.stack].add(r, r.weight_ns);
    });
    table.add(log, by_stack);
  }
  if (s.samples > 0) s.duration_s = double(last - first) / 1e9;
  uint64_t attempted = s.samples + s.invalid;
  s.invalid_share = attempted == 0 ? 0.0 : double(s.invalid) / double(attempted);
  s.kept_samples = table.samples();
  s.kept_s = table.seconds();
  return s;
}

std::string TimeView::describe() const {
  return std::string(on_cpu ? "on-CPU time" : "wall time") + (all_threads ? " of every thread" : " of the step threads");
}

ThreadsByPid step_threads_of(const store::ProfileSamples& samples) {
  timeline::StepTimeline steps;
  if (store::detect(samples.dir, samples.files()).markers) {
    auto read = timeline::read_step_timeline(samples.dir, samples.files());
    if (read.ok()) steps = std::move(*read);  // else each process's main thread
  }
  std::vector<const store::SampleLog*> logs;
  for (const auto& p : samples.processes) logs.push_back(&p.log);
  return query::step_threads(steps, logs);
}

SampleFilter time_view_filter(const TimeView& view, const ThreadsByPid& step_threads) {
  SampleFilter filter;
  filter.include_idle = !view.on_cpu;
  if (!view.all_threads) filter.threads = step_threads;
  return filter;
}

SampleFilter time_view_filter(const TimeView& view, const store::ProfileSamples& samples) {
  return time_view_filter(view, view.all_threads ? ThreadsByPid() : step_threads_of(samples));
}

}  // namespace sprof::report
