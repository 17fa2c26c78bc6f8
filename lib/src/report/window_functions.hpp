#pragma once
// Top functions of the samples taken in one time window (analyze's job phases and slow steps).

#include <cstdint>
#include <vector>

#include "sprof/profile_samples.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::report {

struct WindowFunctions {
  std::vector<FunctionTime> top;  // by self time, descending
  double kept_s = 0;              // summed weight of the samples the filter kept
  uint64_t kept_samples = 0;
};

// The samples of the processes `filter` keeps that cover part of [from_ns, to_ns) (CLOCK_MONOTONIC),
// each weighted by the time it covers there (SampleLog::for_each_overlap).
WindowFunctions window_functions(const store::ProfileSamples& profile, const SampleFilter& filter, int64_t from_ns,
                                 int64_t to_ns, size_t top_n);

class FunctionTable;
// The same samples added into `table` (every function, to be added up across profiles).
void add_window_functions(const store::ProfileSamples& profile, const SampleFilter& filter, int64_t from_ns,
                          int64_t to_ns, FunctionTable& table);

}  // namespace sprof::report
