#pragma once
// The profile directory record writes: never silently mixed with or written over an old one.

#include <filesystem>

#include "sprof/result.hpp"

namespace sprof::launch {

// Fails (usage) when `dir` exists and `force` is not set, or when it exists, is not empty and
// does not look like a sprof profile (no sprof.json): --force replaces profiles, nothing else.
Status check_output_dir(const std::filesystem::path& dir, bool force);

// Creates the directory. An old profile replaced with --force is first moved aside and only
// deleted by commit(), so a command that cannot even start leaves the old profile in place.
class OutputDir {
 public:
  OutputDir() = default;
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  ~OutputDir();

  Status create(const std::filesystem::path& dir, bool force);
  void commit();    // recording started: drop the old profile
  void rollback();  // nothing recorded: remove the new directory, restore the old one

 private:
  std::filesystem::path dir_;
  std::filesystem::path old_;
};

}  // namespace sprof::launch
