#pragma once
// Shared helpers for unit tests: fixture locations and scratch directories.

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

namespace sprof::test {

// smdebug's test resources, vendored under third_party/smdebug-test-resources (see third_party/README.md).
inline std::filesystem::path smdebug_fixtures() {
  return std::filesystem::path(SPROF_SOURCE_DIR) / "third_party" / "smdebug-test-resources";
}

// A fresh directory removed when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / fmt::format("sprof-unit-{:x}", rd() ^ (uint64_t(rd()) << 32));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace sprof::test
