#include "sprof/profile_samples.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace sprof::store {

namespace fs = std::filesystem;

namespace {
bool g_show_sprof_frames = false;
}  // namespace

void set_show_sprof_frames(bool show) { g_show_sprof_frames = show; }
bool show_sprof_frames() { return g_show_sprof_frames; }

bool is_sprof_bootstrap_file(std::string_view file) {
  // <dir>/sitecustomize.py or <dir>/sprof/<name>.py, <dir> as record makes it.
  size_t slash = file.rfind('/');
  if (slash == std::string_view::npos || !file.ends_with(".py")) return false;
  std::string_view dir = file.substr(0, slash);
  if (file.substr(slash + 1) != "sitecustomize.py") {
    if (!dir.ends_with("/sprof")) return false;
    dir.remove_suffix(6);
  }
  if (dir.ends_with("/markers/python")) return true;  // profiles recorded before the private directory
  size_t last = dir.rfind('/');
  std::string_view name = last == std::string_view::npos ? dir : dir.substr(last + 1);
  return name.size() == std::string_view(kBootstrapDirPrefix).size() + 6 && name.starts_with(kBootstrapDirPrefix);
}

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
      if (!g_show_sprof_frames) {
        log->hide_functions([](const LogFunction& f) { return is_sprof_bootstrap_file(f.file); });
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
