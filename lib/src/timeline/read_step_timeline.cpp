// The step timeline of a recorded profile, from its persisted marker files.

#include "sprof/layout.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::timeline {
namespace fs = std::filesystem;

Result<StepTimeline> build_profile_timeline(const fs::path& profile_dir, const store::Manifest* manifest,
                                            std::vector<std::string>* problems, const store::ProfileFiles& files) {
  SPROF_TRY_STATUS(store::check_directory(profile_dir, files));
  StepTimelineBuilder builder;
  std::string text;
  for (std::string_view name : {store::kMarkersLog, store::kStepFnLog}) {
    fs::path file = profile_dir / name;
    if (files.kind(file) == store::FileKind::missing) continue;
    SPROF_TRY_STATUS(files.read(file, text));
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

Result<StepTimeline> read_step_timeline(const fs::path& profile_dir, const store::ProfileFiles& files) {
  std::optional<store::Manifest> manifest;
  if (files.kind(profile_dir / store::kManifestFileName) != store::FileKind::missing) {
    SPROF_TRY(store::Manifest m, store::read_manifest(profile_dir, files));
    manifest = std::move(m);
  }
  return build_profile_timeline(profile_dir, manifest ? &*manifest : nullptr, nullptr, files);
}

}  // namespace sprof::timeline
