#include "sprof/temp_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace sprof {

namespace fs = std::filesystem;

fs::path TempDir::default_base() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);  // $TMPDIR when it names a directory
  return ec ? fs::path("/tmp") : base;
}

Result<TempDir> TempDir::create(std::string_view prefix, const fs::path& base) {
  const std::string pattern = ((base.empty() ? default_base() : base) / (std::string(prefix) + "XXXXXX")).string();
  std::string made = pattern;  // mkdtemp fills in the X's, also when it fails
  if (::mkdtemp(made.data()) == nullptr) {
    return make_error(ErrorKind::io, "cannot create a temporary directory {}: {}", pattern, std::strerror(errno));
  }
  return TempDir(fs::path(made));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() { remove(); }

void TempDir::remove() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  path_.clear();
}

}  // namespace sprof
