#pragma once
// Which raw samples a view reads: idle or on-CPU, holding the GIL, one process, time windows
// (the intervals a query selected). Used by the sample views (sample_report.hpp) and by the
// raw-samples source of queries (sampled_profile.hpp).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sprof/modes.hpp"
#include "sprof/sample_log.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::query {

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
  // Only these threads (native tids) of the processes named (step_threads); a process the map
  // does not name keeps every thread. Unset: every thread.
  std::optional<std::map<int32_t, std::set<int32_t>>> threads;

  bool keeps(const store::SampleRecord& r) const {
    if (r.stack == 0) return false;
    if (!include_idle && r.idle()) return false;
    if (idle_only && !r.idle()) return false;
    if (gil_only && !r.gil()) return false;
    return true;
  }
  // Whether any of this process's samples can be kept (its pid and windows).
  bool keeps_process(int32_t process_pid) const;
  // The thread indexes of `log` that `threads` keeps, as a mask; empty: all of them.
  std::vector<bool> thread_mask(const store::SampleLog& log) const;
  bool keeps(const store::SampleRecord& r, const std::vector<bool>& mask) const {
    if (!mask.empty() && (r.thread >= mask.size() || !mask[r.thread])) return false;
    return keeps(r);
  }
};

// The threads that run a job's steps, by pid (native tids): each step's thread from the step
// timeline, and no thread of a process that ran none (a DataLoader worker); in a job without
// steps, each process's main thread (tid == pid) when it was sampled. The views that answer
// "where does my loop's time go" read these threads by default.
std::map<int32_t, std::set<int32_t>> step_threads(const timeline::StepTimeline& steps,
                                                  const std::vector<const store::SampleLog*>& logs);

// The windows of the steps of `steps` whose mode is `mode` (any when unset) and whose number lies
// in first..last (inclusive; an unset bound is open), per process, sorted and disjoint.
std::vector<SampleWindow> step_windows(const timeline::StepTimeline& steps, std::optional<Mode> mode,
                                       std::optional<int64_t> first, std::optional<int64_t> last);

// One window [begin_ns, end_ns) for each of `pids`.
std::vector<SampleWindow> time_windows(const std::vector<int32_t>& pids, int64_t begin_ns, int64_t end_ns);

// Calls fn, in time order, for the samples of `log` inside the filter's windows (all of them
// without windows); fn still applies keeps().
void for_each_window_sample(const SampleFilter& filter, const store::SampleLog& log,
                            const std::function<void(const store::SampleRecord&)>& fn);

}  // namespace sprof::query
