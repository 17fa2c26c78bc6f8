#include <filesystem>

#include <catch2/catch.hpp>

#include "sprof/layout.hpp"
#include "test_support.hpp"

using namespace sprof::store;
using sprof::test::TempDir;
using sprof::test::write_file;
namespace fs = std::filesystem;

TEST_CASE("layout paths are relative and spelled as smdebug and sprof write them", "[layout]") {
  CHECK(sample_log_path("123-host").generic_string() == "samples/123-host/samples.log");
  CHECK(stats_dir_path("pytorch", kCprofileName, "1-h", "a_b").generic_string() ==
        "framework/pytorch/cprofile/1-h/a_b");
  CHECK(fs::path(kMarkersLog).parent_path() == fs::path(kMarkersDir));
}

TEST_CASE("detect tells sprof, smdebug and other directories apart", "[layout]") {
  TempDir tmp;
  CHECK_FALSE(detect(tmp.path() / "missing").is_directory);
  CHECK_FALSE(detect(tmp.path() / "missing").profile());

  fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  auto nothing = detect(empty);
  CHECK(nothing.is_directory);
  CHECK_FALSE(nothing.profile());

  // A file where a directory is expected is not a directory.
  write_file(tmp.path() / "file", "x");
  CHECK_FALSE(detect(tmp.path() / "file").is_directory);

  fs::path smdebug = tmp.path() / "smdebug";
  fs::create_directories(smdebug / kSystemDir / kSystemMetricsDir);
  auto sm = detect(smdebug);
  CHECK(sm.profile());
  CHECK(sm.rule_data());
  CHECK_FALSE(sm.sprof());
  CHECK_FALSE(sm.raw_samples());

  fs::path sprof = tmp.path() / "sprof";
  fs::create_directories(sprof / kSamplesDir);
  auto partial = detect(sprof);
  CHECK(partial.sprof());  // being written: samples before the manifest
  CHECK_FALSE(partial.raw_samples());
  write_file(sprof / kManifestFileName, "{}");
  write_file(sprof / kMarkersLog, "");
  auto full = detect(sprof);
  CHECK(full.raw_samples());
  CHECK(full.markers);
  CHECK_FALSE(full.rule_data());

  // A directory named like the manifest is not a manifest.
  fs::path odd = tmp.path() / "odd";
  fs::create_directories(odd / kManifestFileName);
  CHECK_FALSE(detect(odd).manifest);
}
