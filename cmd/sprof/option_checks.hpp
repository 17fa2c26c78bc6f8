#pragma once
// Checks for numeric option values. CLI11's Range and PositiveNumber let NaN through (every
// comparison with it is false) and accept values that overflow once converted to nanoseconds.

#include <string>

#include <CLI/CLI.hpp>

namespace sprof::cli {

// A finite number in [min, max]; the message names the range (CLI11 adds the option's name).
CLI::Validator finite_in(double min, double max);
// A finite number > 0 and <= max.
CLI::Validator finite_positive(double max);

// The longest duration any option takes: 100 days, far inside int64 nanoseconds.
inline constexpr double kMaxDurationS = 100.0 * 24 * 3600;

}  // namespace sprof::cli
