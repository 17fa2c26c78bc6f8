#pragma once
// Writing large JSON answers quickly: fetch-by-step and by-phase answer with thousands of stats
// records and functions, and dumping them was a large part of the main thread's time, at the
// end, with nothing else to overlap it.

#include <string>

#include <nlohmann/json.hpp>

namespace sprof {

// `json` as nlohmann's json.dump(indent, ' ', false, error_handler_t::replace) writes it, byte for
// byte (indent < 0: compact), appended to `out`. Faster: strings of printable ASCII (file paths,
// names: nearly all of them) are copied without nlohmann's UTF-8 decoder, and the text is appended
// to one string without a virtual call per piece. Other strings and the numbers are written by
// nlohmann's own code.
void append_json_text(std::string& out, const nlohmann::ordered_json& json, int indent);

}  // namespace sprof
