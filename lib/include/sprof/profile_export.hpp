#pragma once
// `sprof export` of a recorded profile: its samples as stacks (collapsed, speedscope, a flame
// graph SVG) or the whole profile as one Chrome trace (report/chrome_trace.hpp), chosen by format
// name or by the output file's name.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/sample_report.hpp"
#include "sprof/stats_source.hpp"

namespace sprof::report {

// The format -f names ("raw" is "collapsed"), else the one `output`'s name implies (.folded,
// .collapsed, .txt; .speedscope.json; .svg; .json, .json.gz: chrome). Neither: a usage error
// listing the formats.
Result<std::string> export_format(std::string_view format, std::string_view output);

struct ExportRequest {
  std::string format;  // collapsed, speedscope, flamegraph or chrome
  TimeView view;
  bool gil_only = false;
  int32_t pid = 0;  // 0: every process
  // The samples' windows (steps or times); unset: the whole run.
  std::optional<std::vector<query::SampleWindow>> windows;
  std::string title;  // the flame graph's; empty: the directory and the filter
};

struct ExportedProfile {
  std::string text;
  std::string what;  // for people: what was written ("120 samples, wall time of the step threads")
};

// A --pid with no samples in the profile is a usage error; a stack format with no sample matching
// says so in spdlog's warning, not as an error.
Result<ExportedProfile> export_profile(const query::Profile& profile, const ExportRequest& request);

// The stacks of the samples in a stats query's selected intervals (fetch-by-step/-time -f
// collapsed|speedscope|flamegraph), as the source's timer counts them; `source` must have raw
// samples (sampled() set). No sample: spdlog's warning, and empty stacks.
ExportedProfile export_selection_stacks(const query::StatsSource& source, const query::Selection& selection,
                                        StackFormat format, const std::string& title);

}  // namespace sprof::report
