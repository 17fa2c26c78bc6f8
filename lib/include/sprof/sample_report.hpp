#pragma once
// Views over raw samples: record's end-of-run summary and the `export` formats (Brendan Gregg's
// collapsed stacks with py-spy's frame spelling, and speedscope's sampled-profile JSON).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/profile_samples.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/sample_log.hpp"

namespace sprof::report {

using query::SampleFilter;
using query::SampleWindow;
using query::for_each_window_sample;

struct FunctionTime {
  std::string name;
  std::string file;
  int32_t first_line = 0;
  double self_s = 0;   // leaf of the sample
  double waiting_s = 0;  // of self_s, off-CPU (idle samples): the thread waited there
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

// Which samples the views that answer "where does my loop's time go" read (analyze, report,
// export): by default the wall time of the threads that run steps (query::step_threads), idle
// samples included and marked as waiting; on_cpu leaves idle samples out; all_threads reads every
// thread. One default for every such view, and each says which it shows (describe()).
struct TimeView {
  bool on_cpu = false;
  bool all_threads = false;
  std::string describe() const;  // "wall time of the step threads", "on-CPU time of every thread", ...
};

// The threads that run a profile's steps (query::step_threads), from its step timeline (markers/)
// when it has one, else each process's main thread.
using ThreadsByPid = std::map<int32_t, std::set<int32_t>>;
ThreadsByPid step_threads_of(const store::ProfileSamples& samples);

// The filter a TimeView reads samples through, given the step threads; the second form finds
// them itself (when the view needs them).
SampleFilter time_view_filter(const TimeView& view, const ThreadsByPid& step_threads);
SampleFilter time_view_filter(const TimeView& view, const store::ProfileSamples& samples);

// The leaf frame the stack views add under an idle sample's stack: the thread waited there
// (off-CPU), which wall-time views show and on-CPU views leave out.
inline constexpr const char* kWaitingFrame = "[waiting]";

// Every distinct stack the filter keeps, root first, with its sample count; frames spelled
// "name (file:line)" as py-spy does, with a `process PID:"command"` root frame when more than one
// process has samples. Sorted by count (descending), then frames.
struct FoldedStack {
  std::vector<std::string> frames;
  uint64_t count = 0;
};
std::vector<FoldedStack> fold_stacks(const store::ProfileSamples& profile, const SampleFilter& filter);

// For pictures (the report's flame graphs, export's SVG): each run of consecutive frames of
// Python's import machinery (importlib's <frozen importlib._bootstrap...> files) becomes one frame,
// kImportFrame, so that the import chains of `import torch` (~57 frames deep) take a few rows
// and the rows that matter are not pushed off the chart; the imported modules' frames stay.
// Collapsed stacks and speedscope keep every frame.
inline constexpr const char* kImportFrame = "[import machinery]";
std::vector<std::string> fold_import_machinery(const std::vector<std::string>& frames);

// One line per distinct stack, root first: "name (file:line);... count". With more than one
// process in the output, each stack starts with a `process PID:"command"` frame, as py-spy's.
// Lines sorted by count (descending), then text. Returns the number of samples written.
uint64_t write_collapsed(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out);

// An interactive flame graph (flamegraph.pl's look; hover, click to zoom, search, reset) as one
// self-contained SVG. Returns the number of samples drawn.
struct FlamegraphOptions {
  std::string title = "Flame Graph";
  double width_px = 1200;
};
uint64_t write_flamegraph_svg(const store::ProfileSamples& profile, const SampleFilter& filter,
                              const FlamegraphOptions& options, std::string& out);

// speedscope's file format: one sampled profile per (pid, thread), weights in microseconds
// (the measured interval of each sample).
uint64_t write_speedscope(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out);

// The stack formats of export and of the selection commands' -f, in one place.
enum class StackFormat { collapsed, speedscope, flamegraph };
// "collapsed" (or "raw"), "speedscope", "flamegraph"; anything else: none.
std::optional<StackFormat> parse_stack_format(std::string_view name);
// The samples `filter` keeps, in `format` (title: the flame graph's). Returns the samples written.
uint64_t write_stacks(StackFormat format, const store::ProfileSamples& profile, const SampleFilter& filter,
                      const std::string& title, std::string& out);

}  // namespace sprof::report
