#pragma once
// Every path under a profile directory, named in one place, and the one test of what a directory
// holds (detect) that every command uses to recognise sprof and smdebug profiles.
//
//   sprof.json                                   sprof's manifest (manifest.hpp)
//   samples/<node_id>/samples.log                raw samples, one log per process (sample_log.hpp)
//   markers/markers.log, markers/step_fn.log     the bootstrap's markers; --step-fn's inferred steps
//   framework/<framework>/<profiler>/<node_id>/<stats_dir>/python_stats[.json|.html]
//                                                smdebug's python-profiling stats (profile.hpp)
//   framework/pevents/<YYYYMMDDHH>/<end_us>_<node>_<suffix>.json
//                                                Chrome-trace timelines (trace_events.hpp)
//   system/incremental/<YYYYMMDDHH>/<minute_epoch_s>.algo-1.json
//                                                system metrics (system_metrics.hpp)

#include <filesystem>
#include <string_view>

#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

inline constexpr std::string_view kManifestFileName = "sprof.json";
inline constexpr std::string_view kSamplesDir = "samples";
inline constexpr std::string_view kSampleLogFileName = "samples.log";
inline constexpr std::string_view kMarkersDir = "markers";
inline constexpr std::string_view kMarkersLog = "markers/markers.log";
inline constexpr std::string_view kStepFnLog = "markers/step_fn.log";
inline constexpr std::string_view kFrameworkDir = "framework";
inline constexpr std::string_view kTraceEventsDir = "pevents";  // under framework/
inline constexpr std::string_view kSystemDir = "system";
inline constexpr std::string_view kGpuDir = "gpu";
inline constexpr std::string_view kSystemMetricsDir = "incremental";  // under system/

// Profiler directories under framework/<framework>/ and the stats files inside a stats directory.
inline constexpr const char* kCprofileName = "cprofile";
inline constexpr const char* kPyinstrumentName = "pyinstrument";
inline constexpr const char* kCprofileStatsFile = "python_stats";
inline constexpr const char* kPyinstrumentJsonFile = "python_stats.json";
inline constexpr const char* kPyinstrumentHtmlFile = "python_stats.html";

// samples/<node_id>/samples.log, relative to the profile directory.
std::filesystem::path sample_log_path(std::string_view node_id);
// framework/<framework>/<profiler>/<node_id>/<dir_name>, relative to the profile directory.
std::filesystem::path stats_dir_path(std::string_view framework, std::string_view profiler,
                                     std::string_view node_id, std::string_view dir_name);

// What a directory holds, by the parts of the layout present in it. No part is read.
struct ProfileContents {
  bool is_directory = false;
  bool manifest = false;   // sprof.json (a regular file)
  bool samples = false;    // samples/
  bool markers = false;    // markers/markers.log
  bool framework = false;  // framework/
  bool system = false;     // system/
  bool gpu = false;        // gpu/ (libsprof_cupti.so's activity files)

  // Written by sprof record (or being written): either part of sprof's own data.
  bool sprof() const { return manifest || samples; }
  // Any profile, sprof's or smdebug's.
  bool profile() const { return sprof() || framework || system; }
  // Raw samples a query can be answered from: the manifest says how they were taken.
  bool raw_samples() const { return manifest && samples; }
  // What rules read: smdebug's system metrics or framework timelines.
  bool rule_data() const { return framework || system; }
};
ProfileContents detect(const std::filesystem::path& dir, const ProfileFiles& files = local_files());

// The one wording, for every command, of a profile path that is no directory (bad_input):
// "DIR: no such directory", "DIR: not a directory", or why it cannot be read.
Status check_directory(const std::filesystem::path& dir, const ProfileFiles& files = local_files());

// The one wording, for every command, of a directory that holds no profile (bad_input):
// "DIR: not a profile directory (none of sprof.json, samples/, system/, framework/)", naming
// the profiles directly inside it, if any (a parent of several recordings, given by mistake).
Error not_a_profile_error(const std::filesystem::path& dir, const ProfileFiles& files = local_files());

}  // namespace sprof::store
