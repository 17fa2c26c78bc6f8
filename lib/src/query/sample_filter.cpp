// Restricting the sample views to time windows (the intervals a query selected).

#include <algorithm>

#include "sprof/sample_filter.hpp"

namespace sprof::query {

bool SampleFilter::keeps_process(int32_t process_pid) const {
  if (pid && process_pid != *pid) return false;
  if (!windows) return true;
  return std::any_of(windows->begin(), windows->end(), [&](const SampleWindow& w) { return w.pid == process_pid; });
}

void for_each_window_sample(const SampleFilter& filter, const store::SampleLog& log,
                            const std::function<void(const store::SampleRecord&)>& fn) {
  if (!filter.windows) {
    log.for_each_sample(fn);
    return;
  }
  for (const SampleWindow& w : *filter.windows) {
    if (w.pid == log.pid()) log.for_each_sample(w.begin_ns, w.end_ns, fn);
  }
}

}  // namespace sprof::query
