#pragma once
// Making `sprof record` step-aware: the record hook that injects sprof's bootstrap into a launched
// command, persists its markers and turns them (or, with --step-fn, the sampled stacks) into the
// step timeline and smdebug's framework trace.
//
// Files it writes in the profile directory:
//   markers/markers.log   every marker line drained from the target, verbatim, in arrival order
//                         (docs/markers.md); written as it arrives (flushed at least once a second)
//   markers/step_fn.log   steps inferred with --step-fn, in the same line protocol
//   framework/pevents/<YYYYMMDDHH>/<end_us>_<node>_model_timeline.json
//                         Step:ModeKeys.<MODE> events and the DataLoader lanes, per process
// and a "steps" section in sprof.json. The injected bootstrap (sitecustomize.py, the `sprof`
// package) is written to a private temporary directory, $TMPDIR/sprof-bootstrap-XXXXXX, removed
// with the hook.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sprof/bootstrap.hpp"
#include "sprof/manifest.hpp"
#include "sprof/launch.hpp"
#include "sprof/temp_dir.hpp"
#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::bootstrap {


struct StepHookOptions {
  bool inject = true;                       // false: --no-inject
  bool torch = true;                        // automatic PyTorch detection
  std::vector<std::string> step_functions;  // --step-fn QUALNAME (repeatable)
  std::string step_fn_mode = "train";       // --step-fn-mode: the mode of --step-fn's steps
};

// What on_finish found, for the end-of-record summary.
struct StepSummary {
  bool injected = false;
  std::string framework;                 // "pytorch" when any process imported torch, else "python"
  std::map<std::string, int64_t> steps;  // mode ("train", ...) -> steps, all processes
  std::string source;                    // "markers", "step-fn", "markers+step-fn" or "" (no steps)
  int64_t marker_lines = 0;
  int64_t dropped_markers = 0;
  std::vector<std::filesystem::path> trace_files;
  std::string text() const;  // "steps: 12 train, 3 eval (pytorch, from markers)"; "" without steps
};

class StepRecordHook : public launch::RecordHooks {
 public:
  explicit StepRecordHook(StepHookOptions options);
  ~StepRecordHook() override;

  Status prepare_child(const std::filesystem::path& output_dir, launch::ChildSetup& setup) override;
  void on_housekeeping(int64_t now_ns) override;
  std::string cost_name() const override { return "markers"; }
  Status on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) override;

  const StepSummary& summary() const { return summary_; }
  // The step timeline on_finish built (markers and --step-fn steps); nullopt until it has.
  const std::optional<timeline::StepTimeline>& timeline() const { return timeline_; }

 private:
  void drain();

  StepHookOptions options_;
  std::optional<BootstrapEnv> env_;  // launch mode with injection
  int log_fd_ = -1;                  // markers.log
  std::string log_path_;
  TempDir temp_dir_;   // the bootstrap's private directory
  bool log_failed_ = false;
  StepSummary summary_;
  std::optional<timeline::StepTimeline> timeline_;
};

}  // namespace sprof::bootstrap
