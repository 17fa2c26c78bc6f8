#pragma once
// Private scratch directories (rule evaluations, sprof's Python package for a command, a profile
// copied from S3): mkdtemp's mode-0700 directory under $TMPDIR (std::filesystem's
// temp_directory_path), or /tmp where that is unset or unusable, removed with everything in it
// when its owner goes.

#include <filesystem>
#include <string_view>

#include "sprof/result.hpp"

namespace sprof {

class TempDir {
 public:
  // "<base>/<prefix>XXXXXX"; an empty base: $TMPDIR, else /tmp. Errors (io) name the pattern.
  static Result<TempDir> create(std::string_view prefix, const std::filesystem::path& base = {});
  // The directory create() uses when given no base.
  static std::filesystem::path default_base();

  TempDir() = default;
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // Removes it now (and what it holds); errors are ignored, as in the destructor.
  void remove();

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace sprof
