#include "launch/output_dir.hpp"

#include <unistd.h>

#include <ctime>

#include "sprof/manifest.hpp"
#include "sprof/launch.hpp"

namespace sprof::launch {

namespace fs = std::filesystem;

std::string default_output_name(pid_t pid, int64_t realtime_ns) {
  std::time_t seconds = std::time_t(realtime_ns / 1'000'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  return fmt::format("sprof-{}-{}", pid, stamp);
}

Status check_output_dir(const fs::path& dir, bool force) {
  std::error_code ec;
  auto status = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(status)) return {};
  if (!force) {
    return make_error(ErrorKind::usage, "output directory {} already exists; pass --force to replace it", dir.string());
  }
  if (!fs::is_directory(status)) {
    return make_error(ErrorKind::usage, "output path {} exists and is not a directory; not replacing it", dir.string());
  }
  bool empty = fs::is_empty(dir, ec);
  if (!empty && !fs::exists(dir / store::kManifestFileName)) {
    return make_error(ErrorKind::usage,
                      "{} is not empty and holds no {}; --force only replaces sprof profile directories",
                      dir.string(), store::kManifestFileName);
  }
  return {};
}

Status OutputDir::create(const fs::path& dir, bool force) {
  SPROF_TRY_STATUS(check_output_dir(dir, force));
  std::error_code ec;
  dir_ = dir;
  if (fs::exists(dir, ec)) {
    old_ = dir.parent_path() / fmt::format(".{}.sprof-old-{}", dir.filename().string(), getpid());
    fs::rename(dir, old_, ec);
    if (ec) {
      old_.clear();
      return make_error(ErrorKind::io, "cannot move the old profile {} aside: {}", dir.string(), ec.message());
    }
  }
  fs::create_directories(dir, ec);
  if (ec) {
    rollback();
    return make_error(ErrorKind::io, "cannot create output directory {}: {}", dir.string(), ec.message());
  }
  return {};
}

void OutputDir::commit() {
  if (old_.empty()) return;
  std::error_code ec;
  fs::remove_all(old_, ec);
  old_.clear();
}

void OutputDir::rollback() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (!old_.empty()) fs::rename(old_, dir_, ec);
  old_.clear();
  dir_.clear();
}

OutputDir::~OutputDir() { commit(); }

}  // namespace sprof::launch
