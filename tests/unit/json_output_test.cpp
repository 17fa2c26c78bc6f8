// sprof/json_output.hpp: append_json_text must write exactly what nlohmann's
// dump(indent, ' ', false, replace) writes, for every kind of value.

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "sprof/json_output.hpp"

namespace {

using Json = nlohmann::ordered_json;

std::string ours(const Json& json, int indent) {
  std::string out = "prefix:";
  sprof::append_json_text(out, json, indent);
  return out.substr(7);
}

std::string theirs(const Json& json, int indent) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

void check_all_indents(const Json& json) {
  for (int indent : {-1, 0, 1, 2, 4}) {
    INFO("indent " << indent);
    CHECK(ours(json, indent) == theirs(json, indent));
  }
}

}  // namespace

TEST_CASE("json text: containers, nesting and empty ones as nlohmann writes them", "[json_output]") {
  check_all_indents(Json::object());
  check_all_indents(Json::array());
  check_all_indents(Json(nullptr));
  Json doc;
  doc["schema_version"] = 1;
  doc["empty_object"] = Json::object();
  doc["empty_array"] = Json::array();
  doc["list"] = Json::array({1, "two", 3.5, nullptr, true, false, Json::array({Json::object()})});
  doc["nested"]["deeper"]["deepest"] = Json::array({Json{{"a", 1}}, Json{{"b", Json::array()}}});
  check_all_indents(doc);
}

TEST_CASE("json text: strings escaped, non-ASCII kept, invalid UTF-8 replaced", "[json_output]") {
  for (std::string text :
       {std::string(), std::string("plain /usr/lib/python3.11/x.py"), std::string("quote \" and \\ backslash"),
        std::string("tab\tnewline\nreturn\rback\bform\f"), std::string("nul\0byte", 8), std::string("\x01\x1f\x7f"),
        std::string("sigma \xcf\x83 and emoji \xf0\x9f\x98\x80"), std::string("bad \xff\xfe utf-8"),
        std::string("cut \xe2\x82"), std::string("overlong \xc0\xaf")}) {
    INFO(text);
    check_all_indents(Json(text));
    Json keyed;
    keyed[text] = text;  // keys go through the same escaping
    check_all_indents(keyed);
  }
}

TEST_CASE("json text: integers and floats digit for digit", "[json_output]") {
  Json numbers = Json::array();
  for (int64_t i : {int64_t{0}, int64_t{-1}, int64_t{42}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    numbers.push_back(i);
  }
  numbers.push_back(std::numeric_limits<uint64_t>::max());
  for (double d : {0.0, -0.0, 1.0, 0.1, 1e-7, 1e21, 1795809774680306.8, 0.0007645540000000001, 5e-324,
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    numbers.push_back(d);
  }
  std::mt19937_64 random(20261127);
  for (int i = 0; i < 20000; ++i) numbers.push_back(std::bit_cast<double>(random()));
  check_all_indents(numbers);
}

TEST_CASE("json text: binary values as nlohmann writes them", "[json_output]") {
  check_all_indents(Json::binary({1, 2, 255}));
  check_all_indents(Json::binary({}, 7));
  check_all_indents(Json{{"blob", Json::binary({0, 9}, 3)}});
}
