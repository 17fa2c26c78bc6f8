// analyze: training-loop iterations (input wait + step) per mode, the headline, and what the
// threads that run steps did while the loop waited.

#include <map>

#include "report/analyze_parts.hpp"
#include "report/function_table.hpp"

namespace sprof::report {

void summarize_iterations(std::vector<StepRecord>& steps, const std::vector<store::TraceEvent>& events,
                          const store::ProfileSamples* samples, size_t top_n, AnalyzeReport& report) {
  std::vector<rules::StepSpan> spans;
  spans.reserve(steps.size());
  for (const auto& s : steps) spans.push_back({s.node, s.mode, s.step, s.pid, s.start_us, s.end_us});
  std::vector<rules::Iteration> iterations = rules::iterations(spans, events);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!iterations[i].measured) continue;
    steps[i].wait_s = iterations[i].wait_s();
    steps[i].dataloader_s = static_cast<double>(iterations[i].dataloader_us) / 1e6;
  }
  report.iterations = rules::iteration_stats(iterations);
  if (report.iterations.empty()) return;
  const rules::IterationStats& loop = report.iterations.front();

  // What the step threads (report.step_threads, as in the time view) did while the loop waited,
  // wall time: idle samples included, waiting is the point. One pass per process over its waits.
  if (samples != nullptr && samples->manifest) {
    const store::Manifest& manifest = *samples->manifest;
    auto to_ns = [&manifest](int64_t epoch_us) {
      return manifest.to_monotonic_ns(epoch_us);
    };
    std::map<int64_t, std::vector<store::SampleLog::Window>> waits_ns;  // pid -> windows, by start
    for (const auto& it : iterations) {
      if (it.measured && it.step.mode == loop.mode && it.wait_start_us < it.step.start_us) {
        waits_ns[it.step.pid].push_back({to_ns(it.wait_start_us), to_ns(it.step.start_us)});
      }
    }
    SampleFilter threads = time_view_filter(TimeView{}, report.step_threads);
    FunctionTable table;
    for (const auto& p : samples->processes) {
      auto windows = waits_ns.find(p.log.pid());
      if (windows == waits_ns.end()) continue;
      const std::vector<bool> mask = threads.thread_mask(p.log);
      FunctionTable::ByStack by_stack;
      p.log.for_each_overlap(windows->second, [&](const store::SampleRecord& r, int64_t overlap_ns) {
        if (threads.keeps(r, mask)) by_stack[r.stack].add(r, overlap_ns);
      });
      table.add(p.log, by_stack);
    }
    report.wait_top = table.top(top_n);
    report.wait_sampled_s = table.seconds();
  }
  // Where the loop hardly waits, what it did then says nothing about input.
  if (loop.wait_share() < rules::kModeratelyInputBoundShare) {
    report.wait_top.clear();
    report.wait_sampled_s = 0;
  }
  std::string waiting_in;
  if (!report.wait_top.empty() && report.wait_sampled_s > 0) waiting_in = report.wait_top.front().name;
  report.loop_headline = rules::loop_headline(loop, waiting_in);
}

}  // namespace sprof::report
