#pragma once
// Finding the python-profiling stats of a profile directory, as smdebug's
// LocalPythonStatsReader does (smdebug/profiler/analysis/python_stats_reader.py), but robust to
// whatever else is on disk: every entry that cannot be used is reported, never fatal.
//
// Layout: <root>/framework/<framework>/<profiler>/<node_id>/<stats_dir>/<file>
//   <profiler>  cprofile | pyinstrument (any case: smdebug once wrote "cProfile")
//   <stats_dir> a name in either format of stats_dir.hpp; old-format stats dirs sit directly
//               under <profiler> (their node id is in the name)
//   <file>      python_stats (cProfile, a marshalled pstats dict) or python_stats.json /
//               python_stats.html (pyinstrument); the profiler of a record is taken from the
//               file name, as smdebug's local reader does.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/layout.hpp"
#include "sprof/result.hpp"
#include "sprof/stats_dir.hpp"

namespace sprof::store {

// A string read from a file (a node id, a framework name, ...) that becomes one component of a
// path under the profile directory: non-empty, at most 255 bytes, no '/', no NUL, not "." or
// "..", so that nothing is ever written outside the profile. A bad one is a bad_input error
// naming `where` (the file and field it came from).
Status check_path_component(std::string_view value, std::string_view where);

// One stats file: smdebug's StepPythonProfileStats.
struct StatsRecord {
  std::string profiler;   // kCprofileName | kPyinstrumentName
  std::string framework;  // the <framework> directory name
  std::string node_id;
  std::string dir_name;   // the stats directory's name as found on disk
  StatsDirName name;      // parsed dir_name
  std::filesystem::path path;  // the stats file
  // A pstats file under a pyinstrument/ directory: sprof record's, whose call counts and times
  // are estimated from samples (real cProfile output sits under cprofile/).
  bool sampled = false;
};

// Something under the profile directory that was skipped: a malformed name, a file where a
// directory belongs, an entry that could not be read. `message` names `path`.
struct Problem {
  std::filesystem::path path;
  std::string message;
};

// Which level of the layout the given directory was recognised as (none: not part of a profile).
enum class ProfileLevel { root, framework_dir, framework, profiler, node, none };
std::string_view to_string(ProfileLevel level);

struct ProfileIndex {
  std::filesystem::path dir;  // as given
  std::shared_ptr<const ProfileFiles> source;  // where the files are read from; null: locally
  const ProfileFiles& files() const { return source ? *source : local_files(); }
  ProfileLevel level = ProfileLevel::root;
  // Sorted as smdebug sorts them: by start time, then node id (then path, so ties are
  // deterministic where smdebug's order would follow os.listdir).
  std::vector<StatsRecord> records;
  std::vector<Problem> problems;
};

struct DiscoverOptions {
  bool strict = false;  // any problem is an error (bad_input) instead of a skipped entry
};

// Accepts the profile root (containing framework/), framework/, framework/<framework>/,
// framework/<framework>/<profiler>/ (smdebug's local_profile_dir), a node directory, or a
// directory of old-format stats dirs. Errors (bad_input): `dir` missing or not a directory,
// nothing found under it, or (strict) any problem.
Result<ProfileIndex> discover_profile(const std::filesystem::path& dir,
                                      const DiscoverOptions& options = {},
                                      std::shared_ptr<const ProfileFiles> source = nullptr);

// Sorted unique node ids of the records (smdebug's list_available_node_ids); profiler empty
// means all profilers.
std::vector<std::string> node_ids(const ProfileIndex& index, std::string_view profiler = {});

}  // namespace sprof::store
