// analyze: training-loop iterations (input wait + step) per mode, the headline, and what the
// threads that run steps did while the loop waited.

#include <algorithm>
#include <map>

#include "report/analyze_parts.hpp"
#include "report/function_table.hpp"

namespace sprof::report {
namespace {

// The threads of one log that run steps: the one with the most on-CPU sample weight inside the
// process's steps (the training thread computes in its steps; a pin-memory or queue-feeder thread
// waits), or with the most weight at all when every sample in the steps was idle.
std::vector<uint32_t> step_thread(const store::SampleLog& log, const std::vector<std::pair<int64_t, int64_t>>& steps_ns) {
  std::map<uint32_t, std::pair<int64_t, int64_t>> weight;  // thread -> on-CPU, any
  for (const auto& [from, to] : steps_ns) {
    log.for_each_overlap(from, to, [&](const store::SampleRecord& r, int64_t overlap_ns) {
      if (r.stack == 0) return;
      auto& w = weight[r.thread];
      if (!r.idle()) w.first += overlap_ns;
      w.second += overlap_ns;
    });
  }
  if (weight.empty()) return {};
  auto best = std::max_element(weight.begin(), weight.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return {best->first};
}

}  // namespace

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

  // What the step threads did while the loop waited, wall time (idle samples included: waiting is
  // the point).
  const store::Manifest* manifest = samples != nullptr && samples->manifest ? &*samples->manifest : nullptr;
  if (manifest != nullptr) {
    auto to_ns = [manifest](int64_t epoch_us) {
      return epoch_us * 1000 - manifest->clock_realtime_ns + manifest->clock_monotonic_ns;
    };
    std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> waits_ns, steps_ns;  // pid -> windows
    for (const auto& it : iterations) {
      if (!it.measured || it.step.mode != loop.mode) continue;
      waits_ns[it.step.pid].push_back({to_ns(it.wait_start_us), to_ns(it.step.start_us)});
      steps_ns[it.step.pid].push_back({to_ns(it.step.start_us), to_ns(it.step.end_us)});
    }
    FunctionTable table;
    for (const auto& p : samples->processes) {
      auto windows = waits_ns.find(p.log.pid());
      if (windows == waits_ns.end()) continue;
      std::vector<uint32_t> threads = step_thread(p.log, steps_ns[p.log.pid()]);
      FunctionTable::ByStack by_stack;
      for (const auto& [from, to] : windows->second) {
        p.log.for_each_overlap(from, to, [&](const store::SampleRecord& r, int64_t overlap_ns) {
          if (r.stack == 0 || std::find(threads.begin(), threads.end(), r.thread) == threads.end()) return;
          by_stack[r.stack].add(r, overlap_ns);
        });
      }
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
