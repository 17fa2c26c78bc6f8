#include "sprof/layout.hpp"

#include <system_error>

namespace sprof::store {
namespace fs = std::filesystem;

fs::path sample_log_path(std::string_view node_id) {
  return fs::path(kSamplesDir) / node_id / kSampleLogFileName;
}

fs::path stats_dir_path(std::string_view framework, std::string_view profiler, std::string_view node_id,
                        std::string_view dir_name) {
  return fs::path(kFrameworkDir) / framework / profiler / node_id / dir_name;
}

ProfileContents detect(const fs::path& dir) {
  ProfileContents c;
  std::error_code ec;
  c.is_directory = fs::is_directory(dir, ec);
  if (!c.is_directory) return c;
  c.manifest = fs::is_regular_file(dir / kManifestFileName, ec);
  c.samples = fs::is_directory(dir / kSamplesDir, ec);
  c.markers = fs::exists(dir / kMarkersLog, ec);
  c.framework = fs::is_directory(dir / kFrameworkDir, ec);
  c.system = fs::is_directory(dir / kSystemDir, ec);
  return c;
}

}  // namespace sprof::store
