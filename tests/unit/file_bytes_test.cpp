// Atomic writes and sprof's own temporary names (what a live upload holds back).

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "sprof/file_bytes.hpp"
#include "test_support.hpp"

using namespace sprof::store;

TEST_CASE("only sprof's own temporary names count as files being written", "[store][file_bytes]") {
  for (const char* name : {"sprof.json.tmp", "trace.json.tmp12345", "report.html.tmp.4242.0", "obj.part77-3"}) {
    INFO(name);
    CHECK(is_temporary_file_name(name));
  }
  // A user's names that merely contain the words (issue 29, defect 8).
  for (const char* name : {"model.partial.3.json", "x.tmpl", "notes.part", "a.tmp.json", "b.part1", ".tmp", "c.tmp.1.x"}) {
    INFO(name);
    CHECK_FALSE(is_temporary_file_name(name));
  }
}

TEST_CASE("an atomic write replaces the file whole and leaves no temporary behind", "[store][file_bytes]") {
  sprof::test::TempDir dir;
  auto path = dir.path() / "out.txt";
  REQUIRE(write_file_atomically(path, "first").ok());
  REQUIRE(write_file_atomically(path, "second").ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "second");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
  auto missing = write_file_atomically(dir.path() / "no" / "such" / "x", "y");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == sprof::ErrorKind::io);  // an output problem, exit 1
}
