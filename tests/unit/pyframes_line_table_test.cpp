// The line-table decoders against the interpreters' own answers: every installed CPython dumps
// the tables of some stdlib code objects together with the line it reports for each
// instruction (co_lines() on 3.10+, dis.findlinestarts() before), and every offset must match.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "pyframes/line_table.hpp"

namespace fs = std::filesystem;
using sprof::pyframes::kNoLine;
using sprof::pyframes::LineTable;
using sprof::pyframes::LineTableFormat;

namespace {

std::vector<std::string> installed_pythons() {
  std::vector<std::string> found;
  if (fs::exists("/usr/bin/python3")) found.push_back("/usr/bin/python3");
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("PYENV_ROOT")) roots.emplace_back(env);
  if (const char* home = std::getenv("HOME")) roots.push_back(fs::path(home) / ".pyenv");
  roots.emplace_back("/root/.pyenv");
  for (const fs::path& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root / "versions", ec)) continue;
    for (const auto& entry : fs::directory_iterator(root / "versions", ec)) {
      fs::path exe = entry.path() / "bin" / "python";
      if (fs::exists(exe)) found.push_back(exe.string());
    }
    break;
  }
  return found;
}

std::vector<uint8_t> unhex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

nlohmann::json dump_tables(const std::string& python) {
  fs::path out = fs::temp_directory_path() / ("sprof-linetables-" + std::to_string(::getpid()) + ".json");
  std::string script = std::string(SPROF_SOURCE_DIR) + "/tests/unit/data/line_tables_dump.py";
  std::string command = "'" + python + "' '" + script + "' > '" + out.string() + "' 2>/dev/null";
  int rc = std::system(command.c_str());
  nlohmann::json doc;
  if (rc == 0) {
    std::ifstream in(out);
    doc = nlohmann::json::parse(in, nullptr, false);
  }
  fs::remove(out);
  return doc;
}

}  // namespace

TEST_CASE("line-table decoders agree with every installed interpreter", "[pyframes][linetable]") {
  std::vector<std::string> pythons = installed_pythons();
  REQUIRE_FALSE(pythons.empty());
  for (const std::string& python : pythons) {
    nlohmann::json doc = dump_tables(python);
    INFO("interpreter " << python);
    REQUIRE(doc.is_object());
    int major = doc["version"][0];
    int minor = doc["version"][1];
    LineTableFormat format = major == 2 ? LineTableFormat::lnotab_unsigned
                             : minor <= 9 ? LineTableFormat::lnotab
                             : minor == 10 ? LineTableFormat::table_310
                                           : LineTableFormat::locations;
    // 3.11+ tables count code units (2 bytes); the others count bytes.
    int unit = (major == 3 && minor >= 11) ? 2 : 1;
    size_t offsets = 0;
    size_t mismatches = 0;
    std::string first_mismatch;
    for (const auto& code : doc["codes"]) {
      std::vector<uint8_t> table = unhex(code["table"]);
      int first = code["first"];
      LineTable decoded = LineTable::decode(format, table, first);
      for (const auto& pair : code["expect"]) {
        int offset = pair[0];
        int32_t expected = pair[1].is_null() ? kNoLine : pair[1].get<int32_t>();
        int32_t got = decoded.line_at(offset / unit);
        ++offsets;
        if (got != expected) {
          if (mismatches++ == 0) {
            first_mismatch = code["name"].get<std::string>() + " offset " + std::to_string(offset) + ": expected " +
                             std::to_string(expected) + ", decoded " + std::to_string(got);
          }
        }
      }
    }
    INFO("first mismatch: " << first_mismatch);
    CHECK(offsets > 1000);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("line tables: negative offsets and empty tables", "[pyframes][linetable]") {
  // A frame that has not executed its first instruction (3.11 prev_instr = code - 1) reports
  // its first line, whatever the table.
  std::vector<uint8_t> empty;
  for (auto format : {LineTableFormat::lnotab, LineTableFormat::table_310, LineTableFormat::locations}) {
    LineTable t = LineTable::decode(format, empty, 42);
    CHECK(t.line_at(-1) == 42);
  }
  // Truncated varint in a location table: decoding stops without reading past the end.
  std::vector<uint8_t> cut = {0xF0 | 0x0, 0x80 | 0x40};  // long-form entry, then nothing
  LineTable t = LineTable::decode(LineTableFormat::locations, cut, 7);
  CHECK(t.line_at(0) == kNoLine);
}

TEST_CASE("line tables: a running line that would overflow ends the decoding", "[pyframes][linetable]") {
  // Tables are read from another process: a hostile one must not overflow int32 (UBSan makes that
  // fatal in the sanitizer build); the lines decoded before it stay.
  constexpr int32_t top = INT32_MAX - 1;
  std::vector<uint8_t> lnotab = {2, 1, 2, 1, 2, 1};  // (address +2, line +1) three times
  LineTable a = LineTable::decode(LineTableFormat::lnotab, lnotab, top);
  CHECK(a.line_at(0) == top);
  CHECK(a.line_at(2) == INT32_MAX);
  CHECK(a.line_at(4) == INT32_MAX);  // the third step would overflow: not applied
  std::vector<uint8_t> t310 = {2, 1, 2, 1, 2, 1};
  LineTable b = LineTable::decode(LineTableFormat::table_310, t310, top);
  CHECK(b.line_at(0) == INT32_MAX);
  // 3.11+ location table: a long-form entry (code 14) whose line delta is +100.
  std::vector<uint8_t> locations = {0x80 | (14 << 3), 0x40 | 8, 3};  // svarint 200 = +100
  LineTable c = LineTable::decode(LineTableFormat::locations, locations, INT32_MAX - 5);
  CHECK(c.line_at(0) == kNoLine);
  LineTable d = LineTable::decode(LineTableFormat::locations, locations, 7);
  CHECK(d.line_at(0) == 107);
}
