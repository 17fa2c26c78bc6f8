#pragma once
// Names of smdebug's python-profiling stats directories, parsed and formatted exactly as
// smdebug does (smdebug/profiler/analysis/utils/python_profile_analysis_utils.py,
// StepPythonProfileStats.__init__, and TraceFileLocation.get_python_profiling_stats_dir).
//
// Current format (smdebug >= Aug 2020):
//   <start_mode>-<start_step>-<start_phase>-<start_us>_<end_mode>-<end_step>-<end_phase>-<end_us>
//   step: Python int() text or `*` (start `*` = -1, i.e. before step 0; end `*` = +inf, to the end)
//   time: Python float() text, epoch microseconds (smdebug writes repr(time.time() * 1e6))
// Old format (smdebug before Aug 2020, e.g. the files in third_party/smdebug-test-resources/cprofile_python_stats):
//   <start_us>_<end_us>_<node_id>_<step>   (step -1 = before step 0; no mode or phase recorded)

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sprof/modes.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

// Modes and phases (sprof::Mode, sprof::Phase) are spelled in directory names as modes.hpp
// spells them: train eval predict global prestepzero posthookclose; start stepstart
// forwardpassend stepend end.

enum class NameFormat { current, old };
std::string_view to_string(NameFormat format);  // "current" | "old"

// One half of a current-format name. `step` empty means `*`.
struct StepPoint {
  Mode mode = Mode::global;
  std::optional<int64_t> step;
  Phase phase = Phase::start;
  double time_us = 0.0;
};

struct StatsDirName {
  NameFormat format = NameFormat::current;
  StepPoint start;
  StepPoint end;
  std::string node_id;  // old format only: the node id is part of the name

  // smdebug's numeric steps: start `*` -> -1, end `*` -> +inf.
  double start_step_value() const;
  double end_step_value() const;
};

// Parse a directory name in either format. Old-format names carry no modes or phases; sprof
// reads them as mode `global`, step s from `stepstart` to `stepend`, and step -1 as
// pre-step-zero (`prestepzero-*-start` to `global-0-stepstart`). The error message says why
// the name fits neither format (it does not name a path: callers add that).
Result<StatsDirName> parse_stats_dir_name(std::string_view name);

// The directory name smdebug would write: current format with Python repr() floats (times
// below 1e-4, whose repr has an 'e-', positionally so the name still splits), or the
// old format (when name.format == old) from the start/end times, node id and step.
std::string format_stats_dir_name(const StatsDirName& name);

// Python's repr() of a float: shortest round-trip digits, exponent form when the decimal
// exponent is < -4 or >= 16, ".0" appended to integral values ("1596585376012363.8",
// "1.0", "1e+16", "inf", "nan").
std::string python_float_repr(double value);

// Python float(text) and int(text) over ASCII text: surrounding whitespace, a sign,
// decimal digits with optional fraction/exponent, inf/infinity/nan in any case; no hex, no
// underscores (a `_` never reaches them: names are split on it first).
std::optional<double> parse_python_float(std::string_view text);
std::optional<int64_t> parse_python_int(std::string_view text);

}  // namespace sprof::store
