#pragma once
// One window's Chrome trace file: the process's samples, steps and GPU work in the window's time
// range, from what the profile directory holds (read while the recording goes on).

#include <filesystem>

#include "sprof/chrome_trace.hpp"
#include "sprof/manifest.hpp"
#include "sprof/result.hpp"
#include "sprof/trace_windows.hpp"

namespace sprof::traces {

// Writes `path` through a temporary name and a rename, so a reader never sees half a file.
// manifest: the final one at the end of the recording (process exits known); nullptr during it.
// Errors: the file exists and !overwrite (io, naming it), unreadable profile files, a failed write.
Result<report::ChromeTraceCounts> write_window_trace(const std::filesystem::path& profile_dir, const TraceWindow& window,
                                                     const store::Manifest* manifest,
                                                     const std::filesystem::path& path, bool gzip, bool overwrite);

}  // namespace sprof::traces
