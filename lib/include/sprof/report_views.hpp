#pragma once
// What the HTML report (`sprof report`) shows beyond the analyze page: every step's duration, the
// system metrics as time series, and flame graphs of the whole run and of every mode, job phase
// and step, each a pruned stack tree (the page needs no server to switch between them).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sprof/analyze.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"

namespace sprof::report {

struct FlameNode {
  std::string name;
  uint64_t value = 0;  // samples at or under this frame
  std::vector<FlameNode> children;
};

struct FlameView {
  std::string id;     // "all", "other", "process:<pid>", "mode:TRAIN", "phase:training_loop", "step:<pid>:<mode>:<n>"
  std::string label;  // for the page's list
  uint64_t samples = 0;
  FlameNode root;
};

// One line of a chart: values at the series' times, NaN where a tick has none.
struct TimeSeries {
  std::string name;  // "CPU (mean of 2 cores)", "memory used", ...
  std::string unit;  // "%"
  std::vector<double> values;
};

struct SystemTimeline {
  std::string node;
  std::vector<double> t_s;  // seconds since the job's start
  std::vector<TimeSeries> series;
};

// The timeline panel: rows of spans over the job's time (seconds since its start).
struct TimelineSegment {
  double start_s = 0;
  double end_s = 0;
  uint32_t name = 0;  // index into Timeline::names: the leaf function, or the GPU op
  bool idle = false;  // a thread's sample taken while it was off-CPU
};

struct TimelineRow {
  std::string label;  // "pid 123 MainThread", "GPU 0 stream 7"
  int32_t pid = 0;    // the thread's process (0 for GPU rows)
  bool gpu = false;
  std::vector<TimelineSegment> segments;  // by start, disjoint
};

struct Timeline {
  std::vector<std::string> names;
  std::vector<TimelineRow> rows;  // threads by process, then GPU streams
  std::string note;               // what was merged to keep the page small
};

struct ReportViewOptions {
  size_t max_step_views = 1000;  // flame graphs of the longest steps beyond this are left out
  double min_share = 0.001;      // frames under this share of their view are pruned
  size_t max_points = 2000;      // per system series (averaged down to this)
  size_t max_timeline_segments = 40000;
};

struct ReportViews {
  // The recording's sampling, from the manifest (0 without one).
  double rate_hz = 0;
  double achieved_rate_hz = 0;
  double invalid_share = 0;
  uint64_t thread_samples = 0;
  std::vector<FlameView> flames;
  std::string flames_note;    // why there are none, or what was left out
  std::vector<SystemTimeline> system;
  std::string system_note;
  Timeline timeline;
};

// The views from `profile`'s samples, system metrics and GPU activity (analyze keeps only
// summaries; the profile keeps what analyze read).
Result<ReportViews> report_views(const query::Profile& profile, const AnalyzeReport& report,
                                 const ReportViewOptions& options);

}  // namespace sprof::report
