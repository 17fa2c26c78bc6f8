// Walks the fixed-depth stats layout. Nothing here recurses without bound, so symbolic-link
// loops only show up as entries that cannot be stat()ed (ELOOP), reported like any other
// unreadable entry.

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <thread>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/layout.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/profile.hpp"
#include "sprof/profile_samples.hpp"

namespace sprof::store {

Status check_path_component(std::string_view value, std::string_view where) {
  std::string_view why;
  if (value.empty()) {
    why = "is empty";
  } else if (value.size() > 255) {
    why = "is longer than 255 bytes";
  } else if (value == "." || value == "..") {
    why = "is a relative directory";
  } else if (value.find('/') != std::string_view::npos) {
    why = "contains '/'";
  } else if (value.find('\0') != std::string_view::npos) {
    why = "contains a NUL byte";
  }
  if (why.empty()) return {};
  std::string shown(value.substr(0, 80));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return make_error(ErrorKind::bad_input, "{}: \"{}\" {}: it would name a path outside the profile directory",
                    where, shown, why);
}
namespace fs = std::filesystem;
namespace {

bool is_profiler_dir_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == kCprofileName || lower == kPyinstrumentName;
}

class Walker {
 public:
  Walker(ProfileIndex& index, const ProfileFiles& files) : index_(index), files_(files) {}

  void problem(const fs::path& path, std::string message) {
    index_.problems.push_back(Problem{path, std::move(message)});
  }

  // Children of `dir` sorted by name, with their types resolved; entries that cannot be
  // resolved (broken links, link loops, permission) are reported and left out.
  std::vector<FileEntry> children(const fs::path& dir) { return children(dir, files_.list(dir)); }

  std::vector<FileEntry> children(const fs::path& dir, Result<std::vector<FileEntry>> entries) {
    if (!entries.ok()) {
      problem(dir, entries.error().message);
      return {};
    }
    std::vector<FileEntry> out;
    for (FileEntry& entry : *entries) {
      if (!entry.problem.empty()) {
        problem(entry.path, fmt::format("cannot read {}: {}{}", entry.path.string(), entry.problem,
                                        entry.symlink ? " (symbolic link)" : ""));
        continue;
      }
      out.push_back(std::move(entry));
    }
    return out;
  }

  void scan_framework_dir(const fs::path& dir) {
    for (const FileEntry& fw : children(dir)) {
      // framework/ also holds pevents/ and job-end marker files: only look for profilers.
      if (fw.kind != FileKind::directory) continue;
      scan_framework(fw.path, fw.name);
    }
  }

  void scan_framework(const fs::path& dir, const std::string& framework) {
    for (const FileEntry& profiler : children(dir)) {
      if (!is_profiler_dir_name(profiler.name)) continue;  // e.g. detailed_profiling/
      if (profiler.kind != FileKind::directory) {
        problem(profiler.path, fmt::format("expected a profiler directory, found a file: {}",
                                           profiler.path.string()));
        continue;
      }
      scan_profiler(profiler.path, framework, profiler.name);
    }
  }

  void scan_profiler(const fs::path& dir, const std::string& framework, const std::string& profiler_dir) {
    in_profiler_dir(profiler_dir);
    for (const FileEntry& child : children(dir)) {
      if (child.kind != FileKind::directory) {
        problem(child.path, fmt::format("expected a node directory, found a file: {}",
                                        child.path.string()));
        continue;
      }
      // Old-format stats dirs sit directly under the profiler directory.
      auto parsed = parse_stats_dir_name(child.name);
      if (parsed.ok() && parsed->format == NameFormat::old) {
        scan_stats_dir(child, framework, parsed->node_id, parsed.value());
        continue;
      }
      scan_node(child.path, framework, child.name);
    }
  }

  // A cProfile file under pyinstrument/ holds counts that sprof record estimated from samples
  // (a real cProfile writes under cprofile/).
  void in_profiler_dir(const std::string& name) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    sampled_ = lower == kPyinstrumentName;
  }

  void scan_node(const fs::path& dir, const std::string& framework, const std::string& node) {
    const std::vector<FileEntry> kids = children(dir);
    std::vector<const fs::path*> stats_dirs;  // not copies: a path copies each of its components
    for (const FileEntry& child : kids) {
      if (child.kind == FileKind::directory) stats_dirs.push_back(&child.path);
    }
    std::vector<Result<std::vector<FileEntry>>> listings = list_all(stats_dirs);
    size_t at = 0;
    for (const FileEntry& child : kids) {
      if (child.kind != FileKind::directory) {
        problem(child.path, fmt::format("expected a stats directory, found a file: {}",
                                        child.path.string()));
        continue;
      }
      Result<std::vector<FileEntry>>& listing = listings[at++];
      auto parsed = parse_stats_dir_name(child.name);
      if (!parsed.ok()) {
        problem(child.path, fmt::format("{} is not a stats directory name: {}",
                                        child.path.string(), parsed.error().message));
        continue;
      }
      std::string node_id = parsed->format == NameFormat::old ? parsed->node_id : node;
      scan_stats_dir(child, framework, node_id, parsed.value(), std::move(listing));
    }
  }

  // Each directory's listing, in order. A node holds a directory per step or interval, and
  // listing thousands of them is most of a query's walk: a few threads list them at once.
  std::vector<Result<std::vector<FileEntry>>> list_all(const std::vector<const fs::path*>& dirs) {
    std::vector<Result<std::vector<FileEntry>>> out(dirs.size(), std::vector<FileEntry>());
    const unsigned threads = dirs.size() < 64 ? 1 : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < dirs.size(); i = next++) out[i] = files_.list(*dirs[i]);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& thread : pool) thread.join();
    return out;
  }

  void scan_stats_dir(const FileEntry& dir, const std::string& framework, const std::string& node,
                      const StatsDirName& name) {
    scan_stats_dir(dir, framework, node, name, files_.list(dir.path));
  }

  void scan_stats_dir(const FileEntry& dir, const std::string& framework, const std::string& node,
                      const StatsDirName& name, Result<std::vector<FileEntry>> listing) {
    size_t found = 0;
    for (FileEntry& file : children(dir.path, std::move(listing))) {
      std::string profiler;
      if (file.name == kCprofileStatsFile) {
        profiler = kCprofileName;
      } else if (file.name == kPyinstrumentJsonFile || file.name == kPyinstrumentHtmlFile) {
        profiler = kPyinstrumentName;
      } else {
        continue;  // smdebug: "Unknown file ... found, skipping"
      }
      ++found;
      if (file.kind != FileKind::file) {
        problem(file.path,
                fmt::format("expected a stats file, found a directory or special file: {}",
                            file.path.string()));
        continue;
      }
      const bool sampled = sampled_ && profiler == kCprofileName;
      index_.records.push_back(StatsRecord{std::move(profiler), framework, node, dir.name, name,
                                           std::move(file.path), sampled});
    }
    if (found == 0) {
      problem(dir.path, fmt::format("no python_stats, python_stats.json or python_stats.html in {}",
                                    dir.path.string()));
    }
  }

 private:
  ProfileIndex& index_;
  const ProfileFiles& files_;
  bool sampled_ = false;
};

// Which level of the layout `dir` is, judged from what it contains.
// `dir_name`: its own name, from the absolute path ("." names nothing).
ProfileLevel detect_level(const ProfileFiles& files, const fs::path& dir, const std::string& dir_name) {
  // A profile root without python stats still has its other parts (or sprof's manifest).
  ProfileContents contents = detect(dir, files);
  if (contents.framework || contents.system || contents.manifest) {
    return ProfileLevel::root;
  }
  std::vector<fs::path> subdirs;
  auto entries = files.list(dir);
  for (const FileEntry& entry : entries.ok() ? *entries : std::vector<FileEntry>{}) {
    if (is_profiler_dir_name(entry.name) && entry.kind == FileKind::directory) return ProfileLevel::framework;
    if (parse_stats_dir_name(entry.name).ok() &&
        parse_stats_dir_name(entry.name)->format == NameFormat::current) {
      return ProfileLevel::node;
    }
    if (entry.kind == FileKind::directory) subdirs.push_back(entry.path);
  }
  // A profiler directory holds node directories of stats directories; smdebug names it
  // cprofile/ or pyinstrument/. Anything else (a parent of recordings, the system's temporary
  // directory) is no part of a profile and is not walked.
  bool stats_below = is_profiler_dir_name(dir_name);
  for (const fs::path& sub : subdirs) {
    auto sub_entries = files.list(sub);
    if (!sub_entries.ok()) continue;
    for (const FileEntry& entry : *sub_entries) {
      if (is_profiler_dir_name(entry.name) && entry.kind == FileKind::directory) {
        return ProfileLevel::framework_dir;
      }
      if (parse_stats_dir_name(entry.name).ok()) stats_below = true;
    }
    if (parse_stats_dir_name(sub.filename().string()).ok()) stats_below = true;
  }
  return stats_below ? ProfileLevel::profiler : ProfileLevel::none;
}

std::string name_of(const fs::path& absolute) {
  return absolute.filename().string();
}

}  // namespace

std::string_view to_string(ProfileLevel level) {
  switch (level) {
    case ProfileLevel::root: return "profile root";
    case ProfileLevel::framework_dir: return "framework directory";
    case ProfileLevel::framework: return "framework/<framework> directory";
    case ProfileLevel::profiler: return "framework/<framework>/<profiler> directory";
    case ProfileLevel::node: return "node directory";
    case ProfileLevel::none: return "not a profile";
  }
  return "profile root";
}

Result<ProfileIndex> discover_profile(const fs::path& dir, const DiscoverOptions& options,
                                      std::shared_ptr<const ProfileFiles> source) {
  ProfileIndex index;
  index.dir = dir;
  index.source = std::move(source);
  const ProfileFiles& files = index.files();
  SPROF_TRY_STATUS(check_directory(dir, files));
  // Names derived from the path (framework, node) need the real path, not "." or "x/..".
  std::error_code ec;
  fs::path absolute = fs::absolute(dir, ec).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  index.level = detect_level(files, dir, absolute.filename().string());

  Walker walker(index, files);
  switch (index.level) {
    case ProfileLevel::root:
      if (files.kind(dir / kFrameworkDir) == FileKind::directory) walker.scan_framework_dir(dir / kFrameworkDir);
      break;
    case ProfileLevel::framework_dir: walker.scan_framework_dir(dir); break;
    case ProfileLevel::framework: walker.scan_framework(dir, name_of(absolute)); break;
    case ProfileLevel::profiler:
      // smdebug: framework = os.path.basename(os.path.dirname(local_profile_dir)).
      walker.scan_profiler(dir, name_of(absolute.parent_path()), name_of(absolute));
      break;
    case ProfileLevel::node:
      walker.in_profiler_dir(name_of(absolute.parent_path()));
      walker.scan_node(dir, name_of(absolute.parent_path().parent_path()), name_of(absolute));
      break;
    case ProfileLevel::none: return not_a_profile_error(dir, files);
  }

  if (options.strict && !index.problems.empty()) {
    const Problem& first = index.problems.front();
    std::string more = index.problems.size() > 1
                           ? fmt::format("; {} more problem{}", index.problems.size() - 1,
                                         index.problems.size() > 2 ? "s" : "")
                           : "";
    return make_error(ErrorKind::bad_input, "{} (an error with --strict{})", first.message, more);
  }
  if (index.records.empty()) {
    std::string why = index.problems.empty()
                          ? ""
                          : fmt::format(" ({} entries skipped, first: {})", index.problems.size(),
                                        index.problems.front().message);
    std::string hint = unfinished_profile_hint(dir);
    if (!hint.empty()) return make_error(ErrorKind::bad_input, "no python profiling stats under {}: {}", dir.string(), hint);
    return make_error(ErrorKind::bad_input,
                      "no python profiling stats under {}: expected "
                      "framework/<framework>/<profiler>/<node_id>/<stats_dir>/python_stats{}",
                      dir.string(), why);
  }
  if (index.level == ProfileLevel::root) {
    if (std::string hint = unfinished_profile_hint(dir); !hint.empty()) spdlog::warn("{}: {}", dir.string(), hint);
  }

  // Sorted by position, then moved once: a record is a few strings and a path, and moving
  // them at every step of the sort cost more than the comparisons.
  std::vector<size_t> order(index.records.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    const StatsRecord& a = index.records[i];
    const StatsRecord& b = index.records[j];
    if (a.name.start.time_us != b.name.start.time_us) return a.name.start.time_us < b.name.start.time_us;
    if (a.node_id != b.node_id) return a.node_id < b.node_id;
    return a.path < b.path;
  });
  std::vector<StatsRecord> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(index.records[i]));
  index.records = std::move(sorted);
  return index;
}

std::vector<std::string> node_ids(const ProfileIndex& index, std::string_view profiler) {
  std::set<std::string> ids;
  for (const StatsRecord& record : index.records) {
    if (profiler.empty() || record.profiler == profiler) ids.insert(record.node_id);
  }
  return {ids.begin(), ids.end()};
}

}  // namespace sprof::store
