#pragma once
// "writing stats directories 1200/150000" on a terminal, rewritten in place, for work that takes
// more than a second; nothing when stderr is not a terminal or with -q.

#include <cstddef>
#include <functional>

namespace sprof::cli {

// A progress callback for intervals::WriteOptions (always says go on).
std::function<bool(size_t done, size_t total)> stats_directories_progress();

}  // namespace sprof::cli
