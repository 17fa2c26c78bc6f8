// query::Profile: a profile directory opened once, each part read on first use and kept.

#include <catch2/catch.hpp>

#include "sprof/manifest.hpp"
#include "sprof/open_profile.hpp"
#include "test_support.hpp"

using sprof::query::Profile;
using sprof::test::TempDir;
using sprof::test::write_file;

namespace {

void write_manifest(const std::filesystem::path& dir, int64_t realtime_ns, int64_t monotonic_ns) {
  sprof::store::Manifest m;
  m.state = "complete";
  m.mode = "launch";
  m.clock_realtime_ns = realtime_ns;
  m.clock_monotonic_ns = monotonic_ns;
  sprof::store::ManifestProcess p;
  p.pid = 42;
  p.detach_ns = 9000;
  m.processes.push_back(p);
  REQUIRE(sprof::store::write_manifest(dir, m).ok());
}

}  // namespace

TEST_CASE("Profile::open names a missing directory as every command does", "[query][profile]") {
  TempDir tmp;
  auto missing = Profile::open(tmp.path() / "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == sprof::ErrorKind::bad_input);
  CHECK(missing.error().message == (tmp.path() / "nope").string() + ": no such directory");
  write_file(tmp.path() / "file", "x");
  auto file = Profile::open(tmp.path() / "file");
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().message == (tmp.path() / "file").string() + ": not a directory");
}

TEST_CASE("Profile reads each part once and its copies share it", "[query][profile]") {
  TempDir tmp;
  write_manifest(tmp.path(), 5'000'000'000, 1'000'000'000);
  write_file(tmp.path() / "markers" / "markers.log",
             "hello 1000 42 42 1 41 start 3.11.2 /usr/bin/python3\nsb 2000 42 42 train 0 0\nse 3000 42 42 train 0 0\n");
  auto opened = Profile::open(tmp.path());
  REQUIRE(opened.ok());
  const Profile& profile = *opened;
  CHECK(profile.contents().manifest);
  CHECK(profile.contents().markers);
  CHECK_FALSE(profile.contents().gpu);
  CHECK(profile.epoch_offset_ns() == 4'000'000'000);
  auto manifest = profile.manifest();
  REQUIRE(manifest.ok());
  auto timeline = profile.step_timeline();
  REQUIRE(timeline.ok());
  REQUIRE((*timeline)->processes.size() == 1);
  CHECK((*timeline)->processes[0].end_ns == 9000);  // the manifest's detach time

  // Read once: gone from disk, still there for this profile and its copies; a new open sees the loss.
  std::filesystem::remove(tmp.path() / "sprof.json");
  std::filesystem::remove(tmp.path() / "markers" / "markers.log");
  Profile copy = profile;
  auto again = copy.manifest();
  REQUIRE(again.ok());
  CHECK(*again == *manifest);
  CHECK(*copy.step_timeline() == *timeline);
  auto fresh = Profile::open(tmp.path());
  REQUIRE(fresh.ok());
  CHECK_FALSE(fresh->manifest().ok());
}

TEST_CASE("Profile keeps a part's error: smdebug's directory has no samples", "[query][profile]") {
  TempDir tmp;
  write_file(tmp.path() / "system" / "incremental" / "keep", "");
  auto opened = Profile::open(tmp.path());
  REQUIRE(opened.ok());
  CHECK(opened->contents().system);
  CHECK_FALSE(opened->contents().sprof());
  auto samples = opened->samples();
  REQUIRE_FALSE(samples.ok());
  CHECK(samples.error().kind == sprof::ErrorKind::bad_input);
  auto second = opened->samples();
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().message == samples.error().message);
  CHECK(opened->epoch_offset_ns() == 0);  // no sprof.json: smdebug's times are epoch already
  CHECK(opened->nodes().empty());
}
