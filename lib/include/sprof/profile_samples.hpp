#pragma once
// All sample logs of a profile directory (<dir>/samples/<node_id>/samples.log), with the
// manifest when there is one. The logs are found by listing the directory, not from the
// manifest, so a profile whose recording was killed still reads.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/manifest.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_log.hpp"

namespace sprof::store {

struct ProcessSamples {
  std::string node_id;
  std::filesystem::path path;
  SampleLog log;
  const ManifestProcess* process = nullptr;  // its manifest entry, if any
};

struct ProfileSamples {
  std::filesystem::path dir;
  // Where dir's files were read from (load_profile_samples' source, which outlives the samples);
  // null: locally.
  const ProfileFiles* source = nullptr;
  const ProfileFiles& files() const { return source != nullptr ? *source : local_files(); }
  std::optional<Manifest> manifest;
  std::vector<ProcessSamples> processes;  // ordered by pid

  ProfileSamples() = default;
  ProfileSamples(ProfileSamples&&) = default;
  ProfileSamples& operator=(ProfileSamples&&) = default;
};

// The directory record writes the injected bootstrap's Python files into is a private temporary
// one, "<tmp>/sprof-bootstrap-XXXXXX" (mkdtemp); profiles recorded before had them under
// "<profile>/markers/python". The frames of those files (sitecustomize.py, sprof/*.py) are
// sprof's own, not the user's.
inline constexpr const char* kBootstrapDirPrefix = "sprof-bootstrap-";
bool is_sprof_bootstrap_file(std::string_view co_filename);

// Whether the loaded samples keep sprof's own frames (`sprof --sprof-frames`, for debugging
// sprof itself). Off by default: every view and export built from the samples hides them.
void set_show_sprof_frames(bool show);
bool show_sprof_frames();

// Fails (bad_input) when `dir` is not a sprof profile (neither sprof.json nor samples/).
// Frames of sprof's bootstrap are dropped from the stacks unless show_sprof_frames().
// `only_pid`: only that process's logs (node ids "<pid>-<host>"), for a reader during a recording.
Result<ProfileSamples> load_profile_samples(const std::filesystem::path& dir,
                                            std::optional<int32_t> only_pid = std::nullopt, const ProfileFiles& files = local_files());

// Replaces the profile's manifest (e.g. with record's final one, before sprof.json is rewritten)
// and points each process at its entry in it.
void attach_manifest(ProfileSamples& profile, Manifest manifest);

// A recording that never finished (sprof killed, a full disk: sprof.json still says
// "recording") has no process list and no end. Fills them from the sample logs: each log's
// process (pid, ppid, Python version, executable, attach time, counts) and an end at the last
// sample. Does nothing to a finished manifest. load_profile_samples applies it; `stats-dirs`
// writes the result back (state "recovered").
void recover_unfinished(ProfileSamples& profile);
inline constexpr const char* kRecoveredState = "recovered";

// One line for messages about a profile whose recording or statistics are unfinished ("the
// recording did not finish ...: `sprof stats-dirs DIR` finishes it"), or "" when it is finished
// or has no readable sprof.json.
std::string unfinished_profile_hint(const std::filesystem::path& dir, const ProfileFiles& files = local_files());

}  // namespace sprof::store
