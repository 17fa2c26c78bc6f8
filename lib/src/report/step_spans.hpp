#pragma once
// A process's timeline cut into spans (its steps, and for views of the whole run the gaps between
// them), and a sample's time split across them. A sample stands for (time - weight, time]: the
// part of it in each span counts there, with the sample's stack, so that no span gets more time
// per thread than it lasted and the spans together get every sample's whole weight (the same
// weighing as SampleLog::for_each_overlap's).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace sprof::report {

struct StepSpan {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t unit = -1;  // the caller's index of the step; -1: outside steps
};

// `steps` (sorted by begin, disjoint) with the gaps before, between and after them as spans of
// unit -1.
inline std::vector<StepSpan> with_gaps(const std::vector<StepSpan>& steps) {
  std::vector<StepSpan> out;
  int64_t at = std::numeric_limits<int64_t>::min();
  for (const StepSpan& s : steps) {
    if (s.begin_ns > at) out.push_back({at, s.begin_ns, -1});
    out.push_back(s);
    at = std::max(at, s.end_ns);
  }
  out.push_back({at, std::numeric_limits<int64_t>::max(), -1});
  return out;
}

// Calls fn(span, overlap_ns) for each span of `spans` (sorted by begin, disjoint) that the
// sample's time overlaps, in time order.
template <typename Fn>
void split_sample(const std::vector<StepSpan>& spans, int64_t time_ns, int64_t weight_ns, Fn&& fn) {
  if (weight_ns <= 0) return;
  const int64_t start = time_ns - weight_ns;
  auto it = std::upper_bound(spans.begin(), spans.end(), start, [](int64_t t, const StepSpan& s) { return t < s.end_ns; });
  for (; it != spans.end() && it->begin_ns < time_ns; ++it) {
    const int64_t overlap = std::min(time_ns, it->end_ns) - std::max(start, it->begin_ns);
    if (overlap > 0) fn(*it, overlap);
  }
}

// The span holding `time_ns` (begin <= t < end), or null.
inline const StepSpan* span_at(const std::vector<StepSpan>& spans, int64_t time_ns) {
  auto it = std::upper_bound(spans.begin(), spans.end(), time_ns, [](int64_t t, const StepSpan& s) { return t < s.begin_ns; });
  if (it == spans.begin() || time_ns >= (it - 1)->end_ns) return nullptr;
  return &*(it - 1);
}

}  // namespace sprof::report
