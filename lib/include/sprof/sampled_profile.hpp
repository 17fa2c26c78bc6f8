#pragma once
// Queries of a sprof profile answered from its raw samples: every interval of the step timeline
// is a stats record (whether or not a profiling window gave it a stats directory), selected with
// smdebug's predicates (query.hpp) and aggregated from the samples it owns, interval by interval
// in selection order, as smdebug adds stats files. Where the stats directory exists and was
// written with the same timer, the answer is bit-identical to aggregating its python_stats.

#include <filesystem>
#include <optional>
#include <vector>

#include "sprof/interval_stats.hpp"
#include "sprof/profile.hpp"
#include "sprof/query.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::query {

using intervals::ProcessInterval;
using intervals::PythonTimer;

struct SampledProfile {
  store::ProfileSamples samples;
  std::vector<ProcessInterval> intervals;
  // records[i] stands for intervals[i]: profiler cprofile, path where write_interval_stats puts
  // (or would put) its python_stats. Level root, no problems.
  store::ProfileIndex index;
  // The timer record wrote the stats directories with (sprof.json), if it says.
  std::optional<PythonTimer> recorded_timer;

  const ProcessInterval& interval_of(const store::StatsRecord& record) const;
};

// Errors: what load_profile_samples and plan_intervals report.
Result<SampledProfile> load_sampled_profile(const store::ProfilePath& dir,
                                            const timeline::StepTimeline& timeline);

// A thread's threading name; the sampler reads the names of the threads the threading module
// started, so an unnamed thread whose TID is its process's pid is "MainThread".
std::string thread_name(const store::LogThread& thread, int32_t pid);
// Whether a thread of process `pid` is one of `words`: its name (thread_name) or its kernel TID;
// empty keeps all.
bool thread_selected(const store::LogThread& thread, int32_t pid, const std::vector<std::string>& words);
// The pid of a sampled process's log (its first interpreter's), 0 if it has none.
int32_t log_pid(const store::SampleLog& log);

// aggregate() over the samples: `used` lists the records whose intervals kept samples
// (the ones that have a python_stats file when written with this timer); `threads` keeps only
// the samples of those threads (thread_selected), all when empty.
Aggregate aggregate_samples(const SampledProfile& profile, const Selection& records,
                            PythonTimer timer, const std::vector<std::string>& threads = {});

// The filter that keeps exactly the samples of the selected intervals that `timer` keeps, for
// report::write_collapsed / write_speedscope.
SampleFilter selection_filter(const SampledProfile& profile, const Selection& records,
                                      PythonTimer timer);

}  // namespace sprof::query
