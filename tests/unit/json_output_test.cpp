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

namespace {

// Writes `json` through a JsonTextWriter, member by member (built values for the numbers'
// exotic kinds), as render's writers do.
void stream(sprof::JsonTextWriter& w, const Json& json) {
  switch (json.type()) {
    case Json::value_t::object:
      w.begin_object();
      for (const auto& [key, member] : json.items()) {
        w.key(key);
        stream(w, member);
      }
      w.end_object();
      return;
    case Json::value_t::array:
      w.begin_array();
      for (const Json& item : json) stream(w, item);
      w.end_array();
      return;
    case Json::value_t::string: w.string(json.get<std::string>()); return;
    case Json::value_t::number_integer: w.integer(json.get<int64_t>()); return;
    case Json::value_t::number_float: w.real(json.get<double>()); return;
    case Json::value_t::boolean: w.boolean(json.get<bool>()); return;
    case Json::value_t::null: w.null(); return;
    default: w.json(json); return;
  }
}

// A random document: nested objects and arrays (empty ones too), strings, numbers, literals.
Json random_document(std::mt19937_64& random, int depth) {
  const uint64_t kind = random() % (depth > 3 ? 5 : 8);
  switch (kind) {
    case 0: return Json(static_cast<int64_t>(random()));
    case 1: return Json(std::bit_cast<double>(random()));
    case 2: return Json(random() % 2 == 0 ? std::string("/usr/lib/python3.11/x.py") : std::string("bad \xff \"q\""));
    case 3: return random() % 2 == 0 ? Json(nullptr) : Json(random() % 2 == 0);
    case 4: return Json(static_cast<uint64_t>(random()));
    case 5: case 6: {
      Json object = Json::object();
      for (uint64_t i = random() % 4; i > 0; --i) object["k" + std::to_string(random() % 10)] = random_document(random, depth + 1);
      return object;
    }
    default: {
      Json array = Json::array();
      for (uint64_t i = random() % 4; i > 0; --i) array.push_back(random_document(random, depth + 1));
      return array;
    }
  }
}

}  // namespace

TEST_CASE("json text: a JsonTextWriter writes what append_json_text writes for the same document", "[json_output]") {
  std::mt19937_64 random(20261128);
  for (int round = 0; round < 500; ++round) {
    const Json doc = random_document(random, 0);
    for (int indent : {-1, 0, 2, 4}) {
      INFO("round " << round << ", indent " << indent << ": " << theirs(doc, -1));
      std::string streamed;
      sprof::JsonTextWriter w(streamed, indent);
      stream(w, doc);
      CHECK(streamed == ours(doc, indent));
    }
  }
}

TEST_CASE("json text: a prewritten value is spliced in at its depth, re-indented", "[json_output]") {
  std::mt19937_64 random(7);
  for (int round = 0; round < 200; ++round) {
    const Json part = random_document(random, 0);
    for (int indent : {-1, 2, 4}) {
      std::string text;
      sprof::JsonTextWriter w(text, indent);
      stream(w, part);
      Json holder;
      holder["a"] = Json::array({Json::object({{"b", sprof::prewritten_json(text, indent)}}), 1});
      Json expected;
      expected["a"] = Json::array({Json::object({{"b", part}}), 1});
      INFO("round " << round << ", indent " << indent);
      CHECK(ours(holder, indent) == theirs(expected, indent));
    }
  }
  // Written at one indent, spliced into another: a programming error, not wrong output.
  std::string out;
  CHECK_THROWS_AS(sprof::append_json_text(out, Json::array({sprof::prewritten_json("[\n  1\n]", 2)}), 4),
                  std::logic_error);
}

TEST_CASE("json text: every byte at every position of a word is escaped as nlohmann does", "[json_output]") {
  // The printable-ASCII check reads eight bytes at a time: each byte value in each lane, and in
  // the tail after the last whole word.
  for (int value = 0; value < 256; ++value) {
    for (size_t length : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{16}, size_t{21}}) {
      for (size_t at = 0; at < length; ++at) {
        std::string text(length, 'a');
        text[at] = static_cast<char>(value);
        INFO("byte " << value << " at " << at << " of " << length);
        CHECK(ours(Json(text), -1) == theirs(Json(text), -1));
      }
    }
  }
}
