// Private scratch directories (sprof/temp_dir.hpp).

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "sprof/temp_dir.hpp"

namespace fs = std::filesystem;

TEST_CASE("temp dir: under $TMPDIR, private, removed with what it holds", "[temp_dir]") {
  auto parent = sprof::TempDir::create("sprof-test-parent-");
  REQUIRE(parent.ok());
  const char* saved = ::getenv("TMPDIR");
  std::string old = saved != nullptr ? saved : "";
  ::setenv("TMPDIR", parent->path().c_str(), 1);
  auto dir = sprof::TempDir::create("sprof-test-");
  if (saved != nullptr) ::setenv("TMPDIR", old.c_str(), 1); else ::unsetenv("TMPDIR");
  REQUIRE(dir.ok());
  CHECK(dir->path().parent_path() == parent->path());
  CHECK(dir->path().filename().string().rfind("sprof-test-", 0) == 0);
  struct stat st{};
  REQUIRE(::stat(dir->path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  std::ofstream(dir->path() / "f") << "x";
  fs::path where = dir->path();
  {
    sprof::TempDir moved = std::move(dir).value();
    CHECK(moved.path() == where);
  }
  CHECK_FALSE(fs::exists(where));
}

TEST_CASE("temp dir: a base that cannot hold one is an error naming it", "[temp_dir]") {
  auto dir = sprof::TempDir::create("sprof-test-", "/nonexistent/place");
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().kind == sprof::ErrorKind::io);
  CHECK(dir.error().message.find("/nonexistent/place/sprof-test-XXXXXX") != std::string::npos);
}
