#pragma once
// Where store's readers get a profile's files from. Every reader of a recorded profile (layout
// detection, the stats-directory walk, pstats, sample logs, trace events, system metrics, the
// manifest, markers) lists and reads through the ProfileFiles it is given, never the file system
// directly, so a remote profile (an S3 prefix fetched on demand) sits under the same readers and
// queries: a ProfilePath carries a profile's path with its source.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::store {

enum class FileKind { missing, file, directory, other };

struct FileEntry {
  std::filesystem::path path;  // the directory listed / name
  std::string name;
  FileKind kind = FileKind::missing;  // after following symbolic links
  bool symlink = false;
  // Why the entry could not be resolved (a broken link, a link loop, no permission); kind is
  // then missing. Readers report these rather than skip them silently.
  std::string problem;
};

// Every method may be called from several threads at once.
class ProfileFiles {
 public:
  virtual ~ProfileFiles() = default;

  // What is at `path`, following symbolic links: missing when nothing is there, an error when
  // it cannot be found out (no permission on a parent, a link loop).
  virtual Result<FileKind> status(const std::filesystem::path& path) const = 0;

  // status(), with anything that cannot be resolved as missing.
  FileKind kind(const std::filesystem::path& path) const {
    auto s = status(path);
    return s.ok() ? *s : FileKind::missing;
  }

  // All of a regular file's bytes into `out`. Errors name the path: bad_input for a missing
  // file, a directory or one over `max_bytes`; permission; io for a failed read.
  virtual Status read(const std::filesystem::path& path, std::string& out,
                      size_t max_bytes = size_t{1} << 30) const = 0;

  // The direct children of `dir`, sorted by name. An error only when `dir` itself cannot be
  // listed; a child that cannot be resolved comes back with its problem.
  virtual Result<std::vector<FileEntry>> list(const std::filesystem::path& dir) const = 0;

  // A hint that these files will be read next: a remote source fetches them at once, in
  // parallel. Failures are left for read() to report.
  virtual void prefetch(const std::vector<std::filesystem::path>& /*paths*/) const {}
};

// The local file system.
const ProfileFiles& local_files();

// Where a profile is: its path and the source its files come from (the local file system, or an
// S3 prefix fetched on demand, whose readers are given "s3://bucket/prefix/..." paths). Readers
// take the source with the path; nothing looks it up by path.
struct ProfilePath {
  ProfilePath() = default;
  ProfilePath(std::filesystem::path where, std::shared_ptr<const ProfileFiles> from = nullptr)
      : path(std::move(where)), source(std::move(from)) {}
  std::filesystem::path path;
  std::shared_ptr<const ProfileFiles> source;  // null: the local file system
  const ProfileFiles& files() const { return source ? *source : local_files(); }
  // A path under this one, from the same source.
  ProfilePath operator/(const std::filesystem::path& child) const { return ProfilePath(path / child, source); }
};

// Helpers over ProfileFiles.
Result<std::string> read_all(const ProfileFiles& files, const std::filesystem::path& path);
// Every regular file under `root`, depth first in name order, not descending into links to
// directories (as std::filesystem::recursive_directory_iterator); unresolvable entries are left
// out; a directory that cannot be listed is an error. A root that is not a directory: none.
Result<std::vector<std::filesystem::path>> files_under(const ProfileFiles& files,
                                                      const std::filesystem::path& root);

}  // namespace sprof::store
