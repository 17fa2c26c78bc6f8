#pragma once
// Views over raw samples: record's end-of-run summary and the `export` formats (Brendan Gregg's
// collapsed stacks with py-spy's frame spelling, and speedscope's sampled-profile JSON).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sprof/profile_samples.hpp"
#include "sprof/sample_log.hpp"

namespace sprof::report {

// A time range of one process's samples: begin_ns <= time_ns < end_ns.
struct SampleWindow {
  int32_t pid = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

// py-spy's meanings: idle samples are left out unless include_idle; gil_only keeps only the
// samples of threads holding the GIL. Samples without Python frames are always left out.
struct SampleFilter {
  bool include_idle = false;
  bool idle_only = false;  // only idle samples (off-CPU time)
  bool gil_only = false;
  std::optional<int32_t> pid;
  // Only samples inside these windows (sorted by pid, then begin; disjoint). Unset: all.
  std::optional<std::vector<SampleWindow>> windows;

  bool keeps(const store::SampleRecord& r) const {
    if (r.stack == 0) return false;
    if (!include_idle && r.idle()) return false;
    if (idle_only && !r.idle()) return false;
    if (gil_only && !r.gil()) return false;
    return true;
  }
  // Whether any of this process's samples can be kept (its pid and windows).
  bool keeps_process(int32_t process_pid) const;
};

// Calls fn, in time order, for the samples of `log` inside the filter's windows (all of them
// without windows); fn still applies keeps().
void for_each_window_sample(const SampleFilter& filter, const store::SampleLog& log,
                            const std::function<void(const store::SampleRecord&)>& fn);

struct FunctionTime {
  std::string name;
  std::string file;
  int32_t first_line = 0;
  double self_s = 0;   // leaf of the sample
  double total_s = 0;  // anywhere on the stack (once per sample)
  uint64_t self_samples = 0;
};

struct SampleSummary {
  double duration_s = 0;       // first to last sample
  uint64_t samples = 0;        // thread samples logged (all of them)
  uint64_t kept_samples = 0;   // those the filter kept
  double kept_s = 0;           // their summed weights
  uint64_t idle_samples = 0;
  uint64_t invalid = 0;
  double invalid_share = 0;
  size_t processes = 0;
  size_t threads = 0;
  std::vector<FunctionTime> top;  // by self time, descending
};

SampleSummary summarize(const store::ProfileSamples& profile, const SampleFilter& filter, size_t top_n);

// One line per distinct stack, root first: "name (file:line);... count". With more than one
// process in the output, each stack starts with a `process PID:"command"` frame, as py-spy's.
// Lines sorted by count (descending), then text. Returns the number of samples written.
uint64_t write_collapsed(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out);

// speedscope's file format: one sampled profile per (pid, thread), weights in microseconds
// (the measured interval of each sample).
uint64_t write_speedscope(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out);

}  // namespace sprof::report
