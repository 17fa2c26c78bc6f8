#include "sprof/profile_samples.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace sprof::store {

namespace fs = std::filesystem;

Result<ProfileSamples> load_profile_samples(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(ErrorKind::bad_input, "{} is not a directory", dir.string());
  ProfileSamples profile;
  profile.dir = dir;
  bool has_manifest = fs::exists(dir / kManifestFileName, ec);
  fs::path samples_dir = dir / "samples";
  bool has_samples = fs::is_directory(samples_dir, ec);
  if (!has_manifest && !has_samples) {
    return make_error(ErrorKind::bad_input, "{} is not a sprof profile (no {} and no samples/)", dir.string(),
                      kManifestFileName);
  }
  if (has_manifest) {
    auto manifest = read_manifest(dir);
    if (!manifest.ok()) return std::move(manifest).error();
    profile.manifest = std::move(manifest).value();
  }
  if (has_samples) {
    for (const auto& entry : fs::directory_iterator(samples_dir, ec)) {
      fs::path file = entry.path() / std::string(kSampleLogFileName);
      if (!entry.is_directory() || !fs::exists(file)) continue;
      auto log = SampleLog::open(file);
      if (!log.ok()) return std::move(log).error();
      if (log->trailing_bytes() > 0) {
        spdlog::debug("{}: ignoring {} bytes after the last complete chunk ({})", file.string(), log->trailing_bytes(),
                      log->stop_reason());
      }
      ProcessSamples p{entry.path().filename().string(), file, std::move(log).value(), nullptr};
      profile.processes.push_back(std::move(p));
    }
  }
  std::sort(profile.processes.begin(), profile.processes.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.log.pid(), a.node_id) < std::make_pair(b.log.pid(), b.node_id);
  });
  if (profile.manifest) attach_manifest(profile, std::move(*profile.manifest));
  return profile;
}

void attach_manifest(ProfileSamples& profile, Manifest manifest) {
  profile.manifest = std::move(manifest);
  for (auto& p : profile.processes) {
    p.process = nullptr;
    for (const auto& mp : profile.manifest->processes) {
      if (fs::path(mp.sample_log).parent_path().filename() == p.node_id) p.process = &mp;
    }
  }
}

}  // namespace sprof::store
