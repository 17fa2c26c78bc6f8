// The step timeline of a recorded profile, from its persisted marker files.

#include <system_error>

#include "sprof/step_timeline.hpp"
#include "store/file_bytes.hpp"

namespace sprof::timeline {
namespace fs = std::filesystem;

Result<StepTimeline> build_profile_timeline(const fs::path& profile_dir, const store::Manifest* manifest,
                                            std::vector<std::string>* problems) {
  std::error_code ec;
  if (!fs::is_directory(profile_dir, ec)) {
    return make_error(ErrorKind::bad_input, "{} is not a profile directory", profile_dir.string());
  }
  StepTimelineBuilder builder;
  std::string text;
  for (std::string_view name : {store::kMarkersLog, store::kStepFnLog}) {
    fs::path file = profile_dir / name;
    if (!fs::exists(file, ec)) continue;
    SPROF_TRY_STATUS(store::read_file_bytes(file, text));
    store::MarkerParser parser;
    std::vector<store::Marker> markers;
    parser.feed(text, markers);
    parser.finish();  // a recording cut short may end mid-line
    if (problems) {
      for (const auto& p : parser.problems()) problems->push_back(fmt::format("{}: {}", file.string(), p));
    }
    builder.add(markers);
  }
  if (manifest) {
    for (const auto& p : manifest->processes) {
      if (p.detach_ns > 0) builder.set_process_exit(p.pid, p.detach_ns);
    }
  }
  return builder.build();
}

Result<StepTimeline> read_step_timeline(const fs::path& profile_dir) {
  std::error_code ec;
  std::optional<store::Manifest> manifest;
  if (fs::exists(profile_dir / store::kManifestFileName, ec)) {
    SPROF_TRY(store::Manifest m, store::read_manifest(profile_dir));
    manifest = std::move(m);
  }
  return build_profile_timeline(profile_dir, manifest ? &*manifest : nullptr);
}

}  // namespace sprof::timeline
