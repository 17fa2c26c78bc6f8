#include "sprof/profile_samples.hpp"

#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/profile_files.hpp"

namespace sprof::store {

namespace fs = std::filesystem;

namespace {
bool g_show_sprof_frames = false;

// Damage is said once per file and process, however often the profile is loaded (record reads
// it for its summary and for the stats directories; analyze for several sections).
void warn_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(message).second) spdlog::warn("{}", message);
}

void report_damage(const fs::path& file, const SampleLog& log) {
  if (log.skipped_chunks() > 0) {
    warn_once(fmt::format("{}: skipped {} corrupt chunk{} ({} bytes, {} thread samples lost; first: {})", file.string(),
                          log.skipped_chunks(), log.skipped_chunks() == 1 ? "" : "s", log.skipped_bytes(),
                          log.lost_samples(), log.skip_reason()));
  }
  if (log.trailing_bytes() == 0) return;
  // A tail cut short is what a killed recording leaves (at most its last second): not news.
  if (log.stop_reason().starts_with("file ends inside")) {
    spdlog::debug("{}: ignoring {} bytes after the last complete chunk ({})", file.string(), log.trailing_bytes(),
                  log.stop_reason());
    return;
  }
  warn_once(fmt::format("{}: dropped the last {} bytes ({}){}", file.string(), log.trailing_bytes(), log.stop_reason(),
                        log.format_version() < 2 ? "; a version 1 log cannot be read past a corrupt chunk" : ""));
}
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

Result<ProfileSamples> load_profile_samples(const fs::path& dir, std::optional<int32_t> only_pid, const ProfileFiles& files) {
  SPROF_TRY_STATUS(check_directory(dir, files));
  ProfileSamples profile;
  profile.dir = dir;
  profile.source = &files;
  bool has_manifest = files.kind(dir / kManifestFileName) != FileKind::missing;
  fs::path samples_dir = dir / kSamplesDir;
  bool has_samples = files.kind(samples_dir) == FileKind::directory;
  if (!has_manifest && !has_samples) {
    // A job's prefix in the S3 job layout: each node's profile is under nodes/<host>/.
    if (files.kind(dir / "nodes") == FileKind::directory) {
      std::vector<std::string> nodes;
      if (auto entries = files.list(dir / "nodes"); entries.ok()) {
        for (const auto& e : *entries) nodes.push_back(e.name);
      }
      if (!nodes.empty()) {
        return make_error(ErrorKind::bad_input,
                          "{} is a job of {} nodes ({}): give one node's profile, such as {}",
                          dir.string(), nodes.size(), fmt::join(nodes, ", "), (dir / "nodes" / nodes.front()).string());
      }
    }
    return make_error(ErrorKind::bad_input, "{} is not a sprof profile (no {} and no samples/)", dir.string(),
                      kManifestFileName);
  }
  if (has_manifest) {
    auto manifest = read_manifest(dir, files);
    if (!manifest.ok()) return std::move(manifest).error();
    profile.manifest = std::move(manifest).value();
  }
  if (has_samples) {
    SPROF_TRY(auto entries, files.list(samples_dir));
    std::vector<fs::path> logs;
    for (const FileEntry& entry : entries) {
      if (!only_pid || entry.name.starts_with(std::to_string(*only_pid) + "-")) {
        logs.push_back(entry.path / std::string(kSampleLogFileName));
      }
    }
    files.prefetch(logs);
    for (const FileEntry& entry : entries) {
      fs::path file = entry.path / std::string(kSampleLogFileName);
      if (entry.kind != FileKind::directory || files.kind(file) == FileKind::missing) continue;
      if (only_pid && !entry.name.starts_with(std::to_string(*only_pid) + "-")) continue;
      auto log = SampleLog::open(file, files);
      if (!log.ok()) return std::move(log).error();
      report_damage(file, *log);
      if (!g_show_sprof_frames) {
        log->hide_functions([](const LogFunction& f) { return is_sprof_bootstrap_file(f.file); });
      }
      ProcessSamples p{entry.name, file, std::move(log).value(), nullptr};
      profile.processes.push_back(std::move(p));
    }
  }
  std::sort(profile.processes.begin(), profile.processes.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.log.pid(), a.node_id) < std::make_pair(b.log.pid(), b.node_id);
  });
  if (profile.manifest) attach_manifest(profile, std::move(*profile.manifest));
  recover_unfinished(profile);
  return profile;
}

void recover_unfinished(ProfileSamples& profile) {
  if (!profile.manifest || profile.manifest->state != "recording") return;
  Manifest& m = *profile.manifest;
  int64_t last = 0;
  for (const auto& p : profile.processes) {
    last = std::max(last, p.log.last_ns());
    if (p.process != nullptr || p.log.processes().empty()) continue;
    const LogProcess& lp = p.log.processes().back();
    ManifestProcess mp;
    mp.pid = lp.pid;
    mp.ppid = lp.ppid;
    mp.node_id = p.node_id;
    mp.python_version = lp.python_version;
    mp.executable = lp.executable;
    std::error_code ec;
    mp.sample_log = fs::relative(p.path, profile.dir, ec).string();
    if (ec || mp.sample_log.empty()) mp.sample_log = sample_log_path(p.node_id).string();
    mp.attach_ns = p.log.processes().front().attach_ns;
    mp.detach_ns = p.log.last_ns();
    mp.samples = p.log.sample_count();
    mp.invalid = p.log.invalid_count();
    mp.threads = static_cast<uint32_t>(p.log.threads().size());
    if (mp.pid == m.target_pid && !m.command.empty()) {
      mp.cmdline = m.command;
    }
    m.processes.push_back(std::move(mp));
  }
  if (m.end_ns == 0 && last > m.start_ns) m.end_ns = last;
  attach_manifest(profile, std::move(m));
}

std::string unfinished_profile_hint(const fs::path& dir, const ProfileFiles& files) {
  if (files.kind(dir / kManifestFileName) == FileKind::missing) return {};
  auto manifest = read_manifest(dir, files);
  if (!manifest.ok()) return {};
  if (manifest->state == "recording") {
    return fmt::format("the recording did not finish ({} says \"recording\"): `sprof stats-dirs {}` finishes it",
                       (dir / kManifestFileName).string(), dir.string());
  }
  for (const auto& [key, text] : manifest->extra) {
    if (key != "interval_stats") continue;  // intervals::kManifestSection
    auto section = nlohmann::json::parse(text, nullptr, false);
    if (section.is_object() && section.value("finished", true) == false) {
      return fmt::format("its stats directories are unfinished (writing was stopped): `sprof stats-dirs {}` writes them",
                         dir.string());
    }
  }
  return {};
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
