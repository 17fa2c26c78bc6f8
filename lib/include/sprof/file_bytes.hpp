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

// Whether a file name is one of sprof's own temporary names, a file being written: "<name>.tmp",
// "<name>.tmp<pid>", "<name>.tmp.<pid>.<n>" (write_file_atomically), "<name>.part<pid>-<n>" (S3
// downloads). A name that merely contains ".tmp" or ".part" (model.partial.3.json) is not one.
bool is_temporary_file_name(std::string_view name);

}  // namespace sprof::store
