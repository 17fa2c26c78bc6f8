#pragma once
// `sprof record` as one library call: a plan in, a recording out. The stages run in this order:
// launch the command (or attach) with the bootstrap's environment; sample until it ends, with
// the system monitor and the markers channel beside the sampler; close the sample logs; build the
// step timeline from the markers (and --step-fn) and write it as smdebug's step trace; resolve the
// profiling window against it; write the per-interval stats directories; write sprof.json with
// each stage's section. Values pass from stage to stage (the step timeline goes to the stats
// writer in memory).

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "sprof/gpu.hpp"
#include "sprof/interval_stats.hpp"
#include "sprof/launch.hpp"
#include "sprof/python_profiling.hpp"
#include "sprof/result.hpp"
#include "sprof/s3.hpp"
#include "sprof/step_hook.hpp"

namespace sprof::recorder {

struct RecordPlan {
  launch::RecordOptions launch;        // command or attach_pid, rate, output, ...
  window::PythonProfilingPlan python;  // python stats: profiler, window, cProfile timer
  std::optional<int> system_interval_ms;  // system metrics every this many ms; unset: none
  gpu::GpuPlan gpu;                       // CUPTI injection (gpu::plan_gpu)
  bootstrap::StepHookOptions steps;       // injection, PyTorch detection, --step-fn
  intervals::PythonTimer stats_timer = intervals::PythonTimer::total_time;  // sampled stats
  // Called now and then while the stats directories are written; false stops the writing.
  std::function<bool(size_t done, size_t total)> stats_progress;
};

struct Recording {
  launch::RecordResult result;  // output_dir empty: the command could not be started
  bootstrap::StepSummary steps;
  std::optional<intervals::WriteSummary> interval_stats;  // sampled stats written
};

// Usage errors (ErrorKind::usage) for a plan that cannot work: neither or both of a command and
// a pid, cProfile with --pid or without the bootstrap, a system interval smdebug does not know.
// `observers` (a status line, per-step traces, uploads, rules) see the recording as hooks do,
// after every stage's own hook: markers drained, and at the end the step trace and the stats
// directories written.
Result<Recording> record(const RecordPlan& plan, const std::vector<launch::RecordHooks*>& observers = {});

// `sprof stats-dirs`: the end of a recording again, later: rewrites a recorded profile's
// per-interval stats directories from its raw samples and step timeline (another timer, another
// window), keeps sprof.json's interval_stats section true, and finishes a recording that never
// ended (state "recording" becomes "recovered", with processes and end from the sample logs).
struct StatsDirsPlan {
  std::optional<window::ProfilingWindow> window;  // unset: the window record used
  bool every_interval = false;                    // every interval, whatever window record used
  intervals::PythonTimer timer = intervals::PythonTimer::total_time;
  bool empty_dirs = false;  // directories for sample-less intervals even beyond the usual bound
  std::function<bool(size_t done, size_t total)> progress;
};

struct StatsDirsResult {
  intervals::WriteSummary summary;
  bool recovered = false;  // the recording had not finished; sprof.json now says "recovered"
};

// Usage errors: not a profile root with raw samples, a window together with every_interval.
Result<StatsDirsResult> rewrite_stats_directories(const std::filesystem::path& dir, const StatsDirsPlan& plan);

// The same for a local directory or an s3:// profile: one on S3 is rewritten in a local copy
// (under $TMPDIR, removed after) and put back, changed files up and removed ones gone;
// `put_back` then says what was uploaded and what failed.
struct StatsDirsAtResult {
  StatsDirsResult rewrite;
  std::optional<remote::UploadSummary> put_back;
};
Result<StatsDirsAtResult> rewrite_stats_directories_at(const store::ProfilePath& dir, const StatsDirsPlan& plan,
                                                       const remote::S3Options& s3);

}  // namespace sprof::recorder
