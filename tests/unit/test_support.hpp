#pragma once
// Shared helpers for unit tests: fixture locations and scratch directories.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

namespace sprof::test {

// smdebug's test resources (../shared/smdebug-fixtures beside the checkout, or $SPROF_SMDEBUG_FIXTURES).
inline std::filesystem::path smdebug_fixtures() {
  if (const char* env = std::getenv("SPROF_SMDEBUG_FIXTURES")) return env;
  std::filesystem::path source = SPROF_SOURCE_DIR;
  for (auto candidate : {source / ".." / "shared" / "smdebug-fixtures", source / "shared" / "smdebug-fixtures"}) {
    if (std::filesystem::is_directory(candidate)) return std::filesystem::canonical(candidate);
  }
  return source / ".." / "shared" / "smdebug-fixtures";  // tests report the missing path
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
