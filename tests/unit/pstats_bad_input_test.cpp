// The pstats reader on input that is not a pstats file, is damaged, or uses marshal encodings
// CPython can read but rarely writes: clear errors naming file and offset, never a crash, and
// where Python's pstats accepts the data, the same answer as Python.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "pstats_support.hpp"
#include "sprof/pstats.hpp"

using namespace pstats_test;
using sprof::ErrorKind;
using sprof::store::identical;
using sprof::store::parse_pstats;
using sprof::store::read_pstats;
using sprof::store::serialize_pstats;

namespace {

// Builds marshal bytes by hand, for encodings no CPython writer produces.
struct Bytes {
  std::string s;
  Bytes& code(char c, bool ref = false) {
    s.push_back(static_cast<char>(static_cast<unsigned char>(c) | (ref ? 0x80 : 0)));
    return *this;
  }
  Bytes& u8(uint8_t v) {
    s.push_back(static_cast<char>(v));
    return *this;
  }
  Bytes& i32(int32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(static_cast<uint32_t>(v) >> (8 * i)));
    return *this;
  }
  Bytes& i64(int64_t v) {
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i)));
    return *this;
  }
  Bytes& raw(std::string_view bytes) {
    s.append(bytes);
    return *this;
  }
  Bytes& u(std::string_view text, bool ref = false) { return code('u', ref).i32(static_cast<int32_t>(text.size())).raw(text); }
  Bytes& z(std::string_view text, bool ref = false) { return code('z', ref).u8(static_cast<uint8_t>(text.size())).raw(text); }
  Bytes& a(std::string_view text, bool ref = false) { return code('a', ref).i32(static_cast<int32_t>(text.size())).raw(text); }
  Bytes& i(int32_t v, bool ref = false) { return code('i', ref).i32(v); }
  Bytes& g(double v, bool ref = false) {
    code('g', ref);
    char b[8];
    std::memcpy(b, &v, 8);
    return raw(std::string_view(b, 8));
  }
  Bytes& tuple(uint8_t n, bool ref = false) { return code(')', ref).u8(n); }
  Bytes& r(int32_t index) { return code('r').i32(index); }
  Bytes& key(std::string_view file, int32_t line, std::string_view name, bool ref = false) {
    return tuple(3, ref).z(file).i(line).z(name);
  }
  // (cc, nc, tt, ct, {}) with an empty callers dict
  Bytes& plain_value(int32_t cc, int32_t nc, double tt, double ct) {
    return tuple(5).i(cc).i(nc).g(tt).g(ct).code('{').code('0');
  }
};

std::string error_of(std::string_view bytes, const std::string& source = "input.pstats") {
  auto result = parse_pstats(bytes, source);
  if (result.ok()) return "";
  CHECK(result.error().kind == ErrorKind::bad_input);
  CHECK(result.error().message.rfind(source + ": byte ", 0) == 0);
  return result.error().message;
}

// Parses; when it succeeds, what it wrote back must parse to the same table.
void check_no_crash(std::string_view bytes) {
  auto result = parse_pstats(bytes, "fuzzed");
  if (!result.ok()) {
    CHECK(result.error().kind == ErrorKind::bad_input);
    return;
  }
  auto written = serialize_pstats(*result);
  REQUIRE(written.ok());
  auto again = parse_pstats(*written, "rewritten");
  REQUIRE(again.ok());
  CHECK(identical(*result, *again));
}

void check_like_python(const std::string& bytes, const std::string& name) {
  TempDir dir;
  fs::path file = dir.path() / name;
  write_bytes(file, bytes);
  auto table = read_pstats(file);
  INFO(name << ": " << (table.ok() ? "" : table.error().message));
  REQUIRE(table.ok());
  check_matches_python(*table, python_pstats(system_python(), "load", {file}));
}

}  // namespace

TEST_CASE("pstats: a 0-byte file is an error", "[pstats][bad-input]") {
  CHECK_THAT(error_of(""), Catch::Contains("empty file (0 bytes)"));
}

TEST_CASE("pstats: files that cannot be read are errors naming the path", "[pstats][bad-input]") {
  TempDir dir;
  auto missing = read_pstats(dir.path() / "missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::bad_input);
  CHECK_THAT(missing.error().message, Catch::Contains("missing"));

  auto directory = read_pstats(dir.path());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.error().kind == ErrorKind::bad_input);

  fs::create_symlink(dir.path() / "loop_b", dir.path() / "loop_a");
  fs::create_symlink(dir.path() / "loop_a", dir.path() / "loop_b");
  auto loop = read_pstats(dir.path() / "loop_a");
  REQUIRE_FALSE(loop.ok());
  CHECK(loop.error().kind == ErrorKind::bad_input);
  CHECK_THAT(loop.error().message, Catch::Contains("symbolic links"));

  write_bytes(dir.path() / "empty", "");
  auto empty = read_pstats(dir.path() / "empty");
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.error().message, Catch::StartsWith((dir.path() / "empty").string() + ": byte 0"));
}

TEST_CASE("pstats: a truncated file is an error at every length", "[pstats][bad-input]") {
  const Workloads& w = workloads();
  REQUIRE_FALSE(w.made.empty());
  for (const char* kind : {"profile", "cprofile"}) {
    std::string bytes = read_bytes(w.file(w.made.front().label, 0, kind));
    REQUIRE(parse_pstats(bytes, "whole").ok());
    // Every prefix of the small profile-module file, a spread of prefixes of the larger one.
    size_t step = bytes.size() < 4096 ? 1 : bytes.size() / 997;
    for (size_t n = 0; n < bytes.size(); n += step) {
      std::string message = error_of(std::string_view(bytes).substr(0, n));
      INFO("prefix of " << n << " bytes");
      CHECK_THAT(message, Catch::Contains("truncated") || Catch::Contains("file ends where") ||
                              Catch::Contains("empty file"));
    }
  }
}

TEST_CASE("pstats: the parse-then-add path reports the same errors", "[pstats][bad-input]") {
  Bytes b;
  b.code('{').key("f.py", 1, "f").plain_value(1, 1, 0.5, 0.5);  // no end marker
  auto parsed = sprof::store::parse_pstats_owned(b.s, "owned.pstats");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().message == error_of(b.s, "owned.pstats"));
  StatsTable table;
  auto status = table.add_bytes(b.s, "owned.pstats");
  REQUIRE_FALSE(status.ok());
  CHECK(table.empty());
  TempDir dir;
  auto missing = sprof::store::read_pstats_parsed(dir.path() / "missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::bad_input);
}

TEST_CASE("pstats: trailing data after the dict is an error", "[pstats][bad-input]") {
  Bytes b;
  b.code('{').key("f.py", 1, "f").plain_value(1, 1, 0.5, 0.5).code('0');
  REQUIRE(parse_pstats(b.s, "ok").ok());
  std::string message = error_of(b.s + std::string("\x00\x01", 2));
  CHECK_THAT(message, Catch::Contains("2 bytes of trailing data"));
  CHECK_THAT(message, Catch::Contains(fmt::format("byte {}:", b.s.size())));
}

TEST_CASE("pstats: marshal data that is not pstats data is refused", "[pstats][bad-input]") {
  TempDir dir;
  auto made = run(fmt::format("{} {} {}", quote(system_python()),
                              quote((script_dir() / "bad_inputs.py").string()),
                              quote(dir.path().string())));
  REQUIRE(made.status == 0);
  const std::map<std::string, std::string> expected = {
      {"top_list", "top level is a list"},
      {"top_int", "top level is an int"},
      {"empty_dict", "the stats dict is empty"},
      {"code_object", "is a code object"},
      {"set_callers", "the callers of a function is a set, expected a dict"},
      {"frozenset_callers", "the callers of a function is a frozenset"},
      {"list_callers", "is a list, expected a dict"},
      {"complex_time", "the total time (tt) of a function is a complex"},
      {"bytes_file", "file name of a function key is a bytes object, expected a str"},
      {"none_time", "is None, expected a float"},
      {"ellipsis_count", "is Ellipsis, expected an int"},
      {"stopiteration_count", "is StopIteration, expected an int"},
      {"float_count", "is a float, expected an int"},
      {"str_line", "the line number of a function key is a str, expected an int"},
      {"key_not_tuple", "a function key of the stats dict is a str, expected a (file, line, name) tuple"},
      {"key_two_items", "is a tuple of 2 items, expected (file, line, name)"},
      {"value_four_items", "is a tuple of 4 items, expected (cc, nc, tt, ct, callers)"},
      {"value_list", "a value of the stats dict is a list"},
      {"caller_value_str", "a value of a callers dict is a str, expected an (nc, cc, tt, ct) tuple or an int"},
      {"caller_value_three", "is a tuple of 3 items, expected (nc, cc, tt, ct)"},
      {"caller_key_int", "a key of a callers dict is an int"},
      {"count_beyond_int64", "does not fit in 64 bits"},
      {"negative_beyond_int64", "does not fit in 64 bits"},
      {"deep_tuple_key", "is a tuple of 1 item, expected (file, line, name)"},
      {"deep_tuple_file", "the file name of a function key is a tuple, expected a str"},
      {"sampled_marker", "is a tuple of 1 item, expected (file, line, name)"},
  };
  for (const auto& [name, message] : expected) {
    INFO(name);
    fs::path file = dir.path() / name;
    auto result = read_pstats(file);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().kind == ErrorKind::bad_input);
    CHECK_THAT(result.error().message, Catch::StartsWith(file.string() + ": byte "));
    CHECK_THAT(result.error().message, Catch::Contains(message));
  }
  // What Python's pstats accepts, sprof reads the same way: every marshal version, int64
  // extremes, bool counts, int callers, int times.
  for (const char* name : {"good_v0", "good_v1", "good_v2", "good_v3", "good_v4", "good_extremes",
                           "good_bools", "good_int_callers", "good_int_times"}) {
    INFO(name);
    auto table = read_pstats(dir.path() / name);
    INFO((table.ok() ? "" : table.error().message));
    REQUIRE(table.ok());
    check_matches_python(*table, python_pstats(system_python(), "load", {dir.path() / name}));
  }
}

TEST_CASE("pstats: corrupt marshal encodings are clear errors", "[pstats][bad-input]") {
  auto dict_with_key = [](auto&& build_key) {
    Bytes b;
    b.code('{');
    build_key(b);
    b.plain_value(1, 1, 0.5, 0.5).code('0');
    return b.s;
  };
  SECTION("a reference to the dict being read") {
    Bytes b;
    b.code('{', true).r(0);
    CHECK_THAT(error_of(b.s), Catch::Contains("(a cycle)"));
  }
  SECTION("a reference to a tuple from inside it") {
    Bytes b;
    b.code('{').tuple(3, true).r(0);
    CHECK_THAT(error_of(b.s), Catch::Contains("back-reference to a tuple or dict that is still being read"));
  }
  SECTION("a reference past the objects flagged so far") {
    Bytes b;
    b.code('{').tuple(3).z("f", true).i(1).r(1);
    CHECK_THAT(error_of(b.s), Catch::Contains("back-reference to object #1, but only 1 objects"));
  }
  SECTION("a negative reference") {
    Bytes b;
    b.code('{').r(-1);
    CHECK_THAT(error_of(b.s), Catch::Contains("object #-1"));
  }
  SECTION("a reference to an object of the wrong kind") {
    Bytes b;
    b.code('{').tuple(3).z("f", true).i(1).z("n").tuple(5).r(0);
    CHECK_THAT(error_of(b.s), Catch::Contains("is a back-reference to a str, expected an int"));
  }
  SECTION("a negative string length") {
    Bytes b;
    b.code('{').tuple(3).code('u').i32(-5);
    CHECK_THAT(error_of(b.s), Catch::Contains("negative length (-5)"));
  }
  SECTION("a huge string length is a truncation, not an allocation") {
    Bytes b;
    b.code('{').tuple(3).code('a').i32(INT32_MAX);
    CHECK_THAT(error_of(b.s), Catch::Contains("truncated"));
  }
  SECTION("a huge tuple length") {
    Bytes b;
    b.code('{').code('(').i32(INT32_MAX);
    CHECK_THAT(error_of(b.s), Catch::Contains("a tuple of 2147483647 items"));
  }
  SECTION("a long with a zero top digit") {
    CHECK_THAT(error_of(dict_with_key([](Bytes& b) {
                 b.tuple(3).z("f").code('l').i32(2).raw(std::string("\x01\x00\x00\x00", 4)).z("n");
               })),
               Catch::Contains("unnormalized"));
  }
  SECTION("a long digit out of range") {
    CHECK_THAT(error_of(dict_with_key([](Bytes& b) {
                 b.tuple(3).z("f").code('l').i32(1).raw(std::string("\x00\x80", 2)).z("n");
               })),
               Catch::Contains("out of range"));
  }
  SECTION("invalid UTF-8") {
    CHECK_THAT(error_of(dict_with_key([](Bytes& b) { b.tuple(3).u("\xc3(").i(1).z("n"); })),
               Catch::Contains("not valid UTF-8"));
    CHECK_THAT(error_of(dict_with_key([](Bytes& b) { b.tuple(3).u("\xe0\x80\x80").i(1).z("n"); })),
               Catch::Contains("not valid UTF-8"));
    CHECK_THAT(error_of(dict_with_key([](Bytes& b) { b.tuple(3).u("\xf4\x90\x80\x80").i(1).z("n"); })),
               Catch::Contains("not valid UTF-8"));
  }
  SECTION("an unknown type code") {
    CHECK_THAT(error_of(dict_with_key([](Bytes& b) { b.code('\x07'); })),
               Catch::Contains("an unknown type code 0x07"));
  }
  SECTION("bad float text") {
    Bytes b;
    b.code('{').key("f", 1, "n").tuple(5).i(1).i(1).code('f').u8(3).raw("1x5");
    CHECK_THAT(error_of(b.s), Catch::Contains("bad float text"));
  }
  SECTION("a key without its value") {
    Bytes b;
    b.code('{').key("f", 1, "n").code('0');
    CHECK_THAT(error_of(b.s), Catch::Contains("ends after a key without its value"));
  }
  SECTION("no end marker") {
    Bytes b;
    b.code('{').key("f", 1, "n").plain_value(1, 1, 0.5, 0.5);
    CHECK_THAT(error_of(b.s), Catch::Contains("the stats dict has no end marker"));
  }
}

TEST_CASE("pstats: encodings CPython reads but seldom writes match Python's reading",
          "[pstats]") {
  SECTION("ASCII-typed strings with bytes over 0x7f are Latin-1") {
    Bytes b;
    b.code('{').tuple(3).a("/src/d\xe4" "tei.py").i(3).code('Z').u8(4).raw("f\xfc\xdf" "e");
    b.plain_value(1, 1, 0.5, 0.5).code('0');
    check_like_python(b.s, "latin1");
  }
  SECTION("repeated keys keep the first position and the last value") {
    Bytes b;
    b.code('{');
    b.key("a.py", 1, "a").tuple(5).i(1).i(1).g(0.5).g(0.5).code('{');
    b.key("c.py", 3, "c").tuple(4).i(1).i(1).g(0.1).g(0.1);
    b.key("d.py", 4, "d").i(9);
    b.key("c.py", 3, "c").tuple(4).i(2).i(2).g(0.2).g(0.2);
    b.code('0');
    b.key("b.py", 2, "b").plain_value(2, 2, 0.25, 0.25);
    b.key("a.py", 1, "a").plain_value(3, 4, 0.75, 1.5);
    b.code('0');
    check_like_python(b.s, "duplicates");
  }
  SECTION("back-references to keys, values and a shared callers dict") {
    Bytes b;
    b.code('{');
    b.key("a.py", 1, "a", true);  // ref 0: the key tuple
    // refs 1..4: the value tuple, the int 1, the float 0.5, the callers dict
    b.tuple(5, true).i(1, true).i(2).g(0.5, true).g(0.5).code('{', true);
    b.r(0).tuple(4, true).r(2).r(2).r(3).g(0.25);  // a is its own caller; ref 5: that tuple
    b.code('0');
    b.key("b.py", 2, "b").tuple(5).r(2).r(2).r(3).r(3).r(4);  // shares a's callers dict
    b.key("c.py", 3, "c").r(1);                                // shares a's whole value
    b.code('0');
    check_like_python(b.s, "references");
  }
  SECTION("TYPE_INT64 and FLAG_REF on None-like singletons") {
    Bytes b;
    b.code('{').tuple(3).z("f").code('I').i64(int64_t{1} << 40).z("n");
    b.tuple(5).code('T', true).code('F', true).g(0.5).g(0.5).code('{').code('0');
    b.code('0');
    check_like_python(b.s, "int64");
  }
}

TEST_CASE("pstats: back-references that would expand without bound are refused",
          "[pstats][bad-input]") {
  // One 1 MiB file name referenced by thousands of keys: a ~1 MiB file that would otherwise
  // copy gigabytes.
  Bytes b;
  b.code('{');
  b.tuple(3).a(std::string(1 << 20, 'x'), true).i(0).z("n", true);  // refs 0, 1
  b.plain_value(1, 1, 0.5, 0.5);
  for (int i = 1; i < 20000; ++i) b.tuple(3).r(0).i(i).r(1).plain_value(1, 1, 0.5, 0.5);
  b.code('0');
  CHECK_THAT(error_of(b.s), Catch::Contains("back-references expand the data beyond"));
}

TEST_CASE("pstats: damaged real files never crash the reader", "[pstats][bad-input]") {
  const Workloads& w = workloads();
  REQUIRE_FALSE(w.made.empty());
  std::string bytes = read_bytes(w.file(w.made.front().label, 1, "cprofile"));
  for (size_t i = 0; i < bytes.size(); i += 7) {
    for (unsigned char x : {0x01, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ x);
      check_no_crash(damaged);
    }
  }
}
