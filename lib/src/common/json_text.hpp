#pragma once
// Small helpers to write JSON text the way Python's json.dumps does, so files sprof writes read
// like the ones smdebug and SageMaker write (and diff cleanly against them).

#include <cstdint>
#include <string>
#include <string_view>

namespace sprof::store {

// A JSON string literal (quoted, escaped; non-ASCII kept as UTF-8).
void append_json_string(std::string& out, std::string_view text);
std::string json_string(std::string_view text);

// Python's repr of a float: shortest round-trip digits, always with a '.' or an exponent
// ("98.0", "0.5", "1e-05"). Non-finite values are written as 0.0 (JSON has no NaN).
void append_python_float(std::string& out, double value);

// Epoch microseconds as float seconds text without rounding: 1733636920009090 -> "1733636920.00909".
void append_epoch_seconds(std::string& out, int64_t epoch_us);

// Every JSON file sprof reads nests a few levels deep; a hostile one nested thousands deep would
// exhaust the stack in recursive code (nlohmann's dump, our own walks). Readers check this first.
inline constexpr size_t kMaxJsonDepth = 128;
// Whether no array or object in `text` opens deeper than max_depth (strings are skipped; the
// text need not be valid JSON).
bool json_depth_within(std::string_view text, size_t max_depth = kMaxJsonDepth);

// UTC "%Y%m%d%H" of an epoch second (smdebug's directory name for system and trace files).
std::string utc_date_hour(int64_t epoch_s);

}  // namespace sprof::store
