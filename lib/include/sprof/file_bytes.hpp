#pragma once
// Whole-file reads and atomic whole-file writes, with errors that name the path.

#include <filesystem>
#include <string>
#include <string_view>

#include "sprof/result.hpp"

namespace sprof::store {

// Reads all of a regular file into `out` (reusing its capacity). Files over `max_bytes` are
// refused rather than read.
Status read_file_bytes(const std::filesystem::path& path, std::string& out,
                       size_t max_bytes = size_t{1} << 30);

// Writes `bytes` to a temporary file next to `path`, then renames it over `path`, so readers
// never see a half-written file.
Status write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace sprof::store
