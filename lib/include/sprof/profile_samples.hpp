#pragma once
// All sample logs of a profile directory (<dir>/samples/<node_id>/samples.log), with the
// manifest when there is one. The logs are found by listing the directory, not from the
// manifest, so a profile whose recording was killed still reads.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

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
  std::optional<Manifest> manifest;
  std::vector<ProcessSamples> processes;  // ordered by pid

  ProfileSamples() = default;
  ProfileSamples(ProfileSamples&&) = default;
  ProfileSamples& operator=(ProfileSamples&&) = default;
};

// Fails (bad_input) when `dir` is not a sprof profile (neither sprof.json nor samples/).
Result<ProfileSamples> load_profile_samples(const std::filesystem::path& dir);

// Replaces the profile's manifest (e.g. with record's final one, before sprof.json is rewritten)
// and points each process at its entry in it.
void attach_manifest(ProfileSamples& profile, Manifest manifest);

}  // namespace sprof::store
