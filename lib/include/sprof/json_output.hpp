#pragma once
// Building and writing large ordered JSON answers quickly: fetch-by-step and by-phase answer with
// thousands of stats records and functions, and building and dumping them was about a quarter of
// the main thread's time, at the end, with nothing else to overlap it.

#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace sprof {

// A JSON object whose members are appended in order without that search: the caller knows
// its keys are distinct (they are literals in one place). `reserve` is the number of members.
class JsonObjectBuilder {
 public:
  explicit JsonObjectBuilder(size_t reserve) : json_(nlohmann::ordered_json::object()) {
    members().reserve(reserve);
  }
  JsonObjectBuilder& add(std::string_view key, nlohmann::ordered_json value) {
    members().emplace_back(std::string(key), std::move(value));
    return *this;
  }
  nlohmann::ordered_json take() { return std::move(json_); }

 private:
  // ordered_map is a vector of members; appending to it directly skips ordered_map::emplace's scan.
  nlohmann::ordered_json::object_t::Container& members() {
    return json_.get_ref<nlohmann::ordered_json::object_t&>();
  }
  nlohmann::ordered_json json_;
};

// `json` as nlohmann's json.dump(indent, ' ', false, error_handler_t::replace) writes it, byte for
// byte (indent < 0: compact), appended to `out`. Several times faster: strings of printable ASCII
// (file paths, names: nearly all of them) are copied without nlohmann's UTF-8 decoder, and the
// text is appended to one string without a virtual call per piece. Other strings and the
// numbers are written by nlohmann's own code.
void append_json_text(std::string& out, const nlohmann::ordered_json& json, int indent);

}  // namespace sprof
