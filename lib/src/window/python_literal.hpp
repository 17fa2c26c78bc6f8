#pragma once
// A Python literal (what smdebug's profilerconfig.json keeps in its *ProfilingConfig strings and
// smdebug eval()s) read into JSON: dicts, lists, tuples, str ('...' or "..."), int, float,
// True/False/None. Anything else (names, calls, operators) is refused: sprof never evaluates code.

#include <string_view>

#include <nlohmann/json.hpp>

#include "sprof/result.hpp"

namespace sprof::window {

// The error message says what was wrong and at which character (0-based).
Result<nlohmann::json> parse_python_literal(std::string_view text);

}  // namespace sprof::window
