#include "sprof/layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sprof/profile_files.hpp"

namespace sprof::store {
namespace fs = std::filesystem;

fs::path sample_log_path(std::string_view node_id) {
  return fs::path(kSamplesDir) / node_id / kSampleLogFileName;
}

fs::path stats_dir_path(std::string_view framework, std::string_view profiler, std::string_view node_id,
                        std::string_view dir_name) {
  return fs::path(kFrameworkDir) / framework / profiler / node_id / dir_name;
}

Status check_directory(const fs::path& dir, const ProfileFiles& files) {
  auto status = files.status(dir);
  if (!status.ok()) return status.error();  // "cannot read DIR: why"
  if (*status == FileKind::missing) return make_error(ErrorKind::bad_input, "{}: no such directory", dir.string());
  if (*status != FileKind::directory) return make_error(ErrorKind::bad_input, "{}: not a directory", dir.string());
  return {};
}

Error not_a_profile_error(const fs::path& dir, const ProfileFiles& files) {
  // Only the directory's own entries are looked at: a parent such as the system's temporary
  // directory is not walked.
  std::vector<std::string> inside;
  auto entries = files.list(dir);
  for (const FileEntry& entry : entries.ok() ? *entries : std::vector<FileEntry>{}) {
    if (entry.kind == FileKind::directory && detect(entry.path, files).profile()) inside.push_back(entry.path.string());
  }
  std::sort(inside.begin(), inside.end());
  std::string hint;
  constexpr std::size_t kNamed = 3;
  if (!inside.empty()) {
    std::vector<std::string> named(inside.begin(), inside.begin() + static_cast<std::ptrdiff_t>(
                                                                        std::min(inside.size(), kNamed)));
    hint = fmt::format("; profile{} inside it: {}{}", inside.size() > 1 ? "s" : "", fmt::join(named, ", "),
                       inside.size() > kNamed ? fmt::format(" and {} more", inside.size() - kNamed) : "");
  }
  return make_error(ErrorKind::bad_input,
                    "{}: not a profile directory (none of sprof.json, samples/, system/, framework/){}", dir.string(),
                    hint);
}

ProfileContents detect(const fs::path& dir, const ProfileFiles& files) {
  ProfileContents c;
  c.is_directory = files.kind(dir) == FileKind::directory;
  if (!c.is_directory) return c;
  c.manifest = files.kind(dir / kManifestFileName) == FileKind::file;
  c.samples = files.kind(dir / kSamplesDir) == FileKind::directory;
  c.markers = files.kind(dir / kMarkersLog) != FileKind::missing;
  c.framework = files.kind(dir / kFrameworkDir) == FileKind::directory;
  c.system = files.kind(dir / kSystemDir) == FileKind::directory;
  c.gpu = files.kind(dir / kGpuDir) == FileKind::directory;
  return c;
}

}  // namespace sprof::store
