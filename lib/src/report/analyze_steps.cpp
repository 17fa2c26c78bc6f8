// analyze: steps from the framework timeline, their statistics and the job phases they imply.

#include <algorithm>
#include <cstdlib>
#include <map>

#include "report/analyze_parts.hpp"
#include "rules/numeric.hpp"

namespace sprof::report {

std::optional<int64_t> StepRecord::number() const {
  char* end = nullptr;
  long long n = std::strtoll(step.c_str(), &end, 10);
  if (end == step.c_str() || *end != '\0') return std::nullopt;
  return n;
}

std::vector<StepRecord> collect_steps(const std::vector<store::TraceEvent>& events) {
  std::vector<StepRecord> steps;
  for (auto& span : rules::step_spans(events)) {
    StepRecord s;
    s.node = std::move(span.node);
    s.mode = std::move(span.mode);
    s.step = std::move(span.step);
    s.pid = span.pid;
    s.start_us = span.start_us;
    s.end_us = span.end_us;
    steps.push_back(std::move(s));
  }
  return steps;
}

std::vector<StepModeStats> step_statistics(std::vector<StepRecord>& steps, double stddev) {
  // Series in order of first appearance, as the rule keeps them (node, then step event name).
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> members;
  for (size_t i = 0; i < steps.size(); ++i) {
    auto key = std::make_pair(steps[i].node, steps[i].mode);
    auto [it, added] = members.try_emplace(key);
    if (added) keys.push_back(key);
    it->second.push_back(i);
  }
  std::vector<StepModeStats> out;
  for (const auto& key : keys) {
    const auto& index = members[key];
    std::vector<double> durations;
    for (size_t i : index) durations.push_back(steps[i].seconds());
    StepModeStats st;
    st.node = key.first;
    st.mode = key.second;
    st.count = durations.size();
    st.mean = rules::mean(durations);
    double sd = rules::population_std(durations);
    st.outlier_threshold = st.mean + stddev * sd;
    std::vector<double> sorted = durations;
    std::sort(sorted.begin(), sorted.end());
    st.p50 = rules::quantile_sorted(sorted, 0.50);
    st.p95 = rules::quantile_sorted(sorted, 0.95);
    st.min = sorted.front();
    st.max = sorted.back();
    for (size_t k = 0; k < index.size(); ++k) {
      if (durations[k] > st.outlier_threshold) {
        steps[index[k]].outlier = true;
        st.outlier_steps.push_back(steps[index[k]].step);
      }
    }
    out.push_back(std::move(st));
  }
  return out;
}

std::vector<JobPhase> job_phases(const std::vector<StepRecord>& steps, int64_t job_start_us, int64_t job_end_us) {
  if (steps.empty()) return {};
  int64_t first = steps.front().start_us;
  int64_t last = first;
  for (const auto& s : steps) {
    first = std::min(first, s.start_us);
    last = std::max(last, s.end_us);
  }
  int64_t start = std::min(job_start_us, first);
  int64_t end = std::max(job_end_us, last);
  double total = static_cast<double>(end - start);
  std::vector<JobPhase> phases = {{"initialization", start, first, 0, {}},
                                  {"training_loop", first, last, 0, {}},
                                  {"finalization", last, end, 0, {}}};
  for (auto& p : phases) p.share = total > 0 ? static_cast<double>(p.end_us - p.start_us) / total : 0.0;
  return phases;
}

}  // namespace sprof::report
