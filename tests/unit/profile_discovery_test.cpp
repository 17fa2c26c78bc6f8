#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "sprof/profile.hpp"
#include "sprof/profile_samples.hpp"

namespace fs = std::filesystem;
using namespace sprof::store;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "sprof-discovery-XXXXXX").string();
    path = mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void touch(const fs::path& file) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "x";
}

bool mentions(const ProfileIndex& index, const fs::path& path) {
  for (const auto& p : index.problems) {
    if (p.path == path && p.message.find(path.string()) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("discovery finds stats at every level of the layout", "[discovery]") {
  TempDir tmp;
  fs::path profiler = tmp.path / "framework" / "pytorch" / "cprofile";
  touch(profiler / "1-algo-1" / "train-1-stepstart-30.0_train-1-stepend-40.0" / "python_stats");
  touch(profiler / "0-algo-1" / "train-1-stepstart-30.0_train-1-stepend-40.0" / "python_stats");
  touch(profiler / "0-algo-1" / "prestepzero-*-start-10.5_train-1-stepstart-20.0" /
        "python_stats");
  fs::path pyi = tmp.path / "framework" / "pytorch" / "pyinstrument" / "0-algo-1" /
                 "train-2-stepstart-50.0_train-2-stepend-60.0";
  touch(pyi / "python_stats.json");
  touch(pyi / "python_stats.html");
  touch(tmp.path / "framework" / "pevents" / "2020010100" / "1_0-algo-1_pythontimeline.json");
  touch(tmp.path / "framework" / "training_job_end.ts");
  touch(tmp.path / "framework" / "tensorflow" / "detailed_profiling" / "2020010100" /
        "000000005" / "x.trace.json.gz");

  auto index = discover_profile(tmp.path);
  REQUIRE(index.ok());
  CHECK(index->level == ProfileLevel::root);
  CHECK(index->problems.empty());
  REQUIRE(index->records.size() == 5);
  // Sorted by start time, then node id.
  CHECK(index->records[0].name.start.time_us == 10.5);
  CHECK(index->records[1].node_id == "0-algo-1");
  CHECK(index->records[2].node_id == "1-algo-1");
  CHECK(index->records[0].framework == "pytorch");
  CHECK(index->records[0].profiler == "cprofile");
  CHECK(index->records[3].profiler == "pyinstrument");
  CHECK(node_ids(*index) == std::vector<std::string>{"0-algo-1", "1-algo-1"});

  for (auto [dir, level] : {std::pair{tmp.path / "framework", ProfileLevel::framework_dir},
                            std::pair{tmp.path / "framework" / "pytorch", ProfileLevel::framework},
                            std::pair{profiler, ProfileLevel::profiler}}) {
    auto sub = discover_profile(dir);
    REQUIRE(sub.ok());
    CHECK(sub->level == level);
    CHECK(sub->records.size() == (level == ProfileLevel::profiler ? 3u : 5u));
    CHECK(sub->records[0].framework == "pytorch");
  }
  auto node = discover_profile(profiler / "0-algo-1");
  REQUIRE(node.ok());
  CHECK(node->level == ProfileLevel::node);
  CHECK(node->records.size() == 2);
  CHECK(node->records[0].node_id == "0-algo-1");
  CHECK(node->records[0].framework == "pytorch");
}

TEST_CASE("discovery skips and reports what does not belong", "[discovery]") {
  TempDir tmp;
  fs::path profiler = tmp.path / "framework" / "pytorch" / "cprofile";
  fs::path node = profiler / "0-algo-1";
  touch(node / "train-1-stepstart-30.0_train-1-stepend-40.0" / "python_stats");
  touch(profiler / "stray-file");
  fs::path stray_stats = node / "train-2-stepstart-50.0_train-2-stepend-60.0";
  touch(stray_stats);  // a file where a stats directory belongs
  fs::path bad_name = node / "not_a_stats_dir_name";
  touch(bad_name / "python_stats");
  fs::path empty_stats = node / "train-3-stepstart-70.0_train-3-stepend-80.0";
  fs::create_directories(empty_stats);
  fs::path dir_stats = node / "train-4-stepstart-90.0_train-4-stepend-95.0" / "python_stats";
  fs::create_directories(dir_stats);
  fs::path loop = node / "loop";
  fs::create_symlink("loop", loop);
  fs::path dangling = node / "dangling";
  fs::create_symlink("nowhere", dangling);

  auto index = discover_profile(tmp.path);
  REQUIRE(index.ok());
  CHECK(index->records.size() == 1);
  CHECK(mentions(*index, profiler / "stray-file"));
  CHECK(mentions(*index, stray_stats));
  CHECK(mentions(*index, bad_name));
  CHECK(mentions(*index, empty_stats));
  CHECK(mentions(*index, dir_stats));
  CHECK(mentions(*index, loop));
  CHECK(mentions(*index, dangling));
  CHECK(index->problems.size() == 7);

  DiscoverOptions strict;
  strict.strict = true;
  auto failed = discover_profile(tmp.path, strict);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().kind == sprof::ErrorKind::bad_input);
  CHECK(failed.error().message.find("--strict") != std::string::npos);
}

// What a stats directory holds: its stats files in name order, a link to a file as a file,
// anything else skipped; a broken link named and the directory reported as holding none.
TEST_CASE("a stats directory's files, links and strays", "[discovery]") {
  TempDir tmp;
  fs::path node = tmp.path / "framework" / "pytorch" / "cprofile" / "0-algo-1";
  fs::path both = node / "train-1-stepstart-30.0_train-1-stepend-40.0";
  touch(both / "python_stats");
  touch(both / "python_stats.json");
  touch(both / "notes.txt");  // not a stats file: skipped, as smdebug skips it
  fs::path linked = node / "train-2-stepstart-50.0_train-2-stepend-60.0";
  fs::create_directories(linked);
  fs::create_symlink(both / "python_stats", linked / "python_stats");
  fs::path dangling = node / "train-3-stepstart-70.0_train-3-stepend-80.0";
  fs::create_directories(dangling);
  fs::create_symlink("nowhere", dangling / "python_stats");
  fs::path other = node / "train-4-stepstart-90.0_train-4-stepend-95.0";
  touch(other / "notes.txt");

  auto index = discover_profile(tmp.path);
  REQUIRE(index.ok());
  REQUIRE(index->records.size() == 3);
  CHECK(index->records[0].path == both / "python_stats");
  CHECK(index->records[0].profiler == "cprofile");
  CHECK(index->records[1].path == both / "python_stats.json");
  CHECK(index->records[1].profiler == "pyinstrument");
  CHECK(index->records[2].path == linked / "python_stats");  // a link to a file is a file
  CHECK(mentions(*index, dangling / "python_stats"));  // a broken link
  CHECK(mentions(*index, dangling));                    // so no stats file there
  CHECK(mentions(*index, other));
  CHECK(index->problems.size() == 3);
}

TEST_CASE("discovery errors name the directory", "[discovery]") {
  TempDir tmp;
  auto missing = discover_profile(tmp.path / "missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == sprof::ErrorKind::bad_input);
  CHECK(missing.error().message.find((tmp.path / "missing").string()) != std::string::npos);

  auto empty = discover_profile(tmp.path);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message == tmp.path.string() +
                                     ": not a profile directory (none of sprof.json, samples/, system/, framework/)");

  // A parent of recordings is not walked as a profiler directory: the profiles inside are named.
  touch(tmp.path / "run-b" / "framework" / "pytorch" / "cprofile" / "0-algo-1" /
        "train-1-stepstart-30.0_train-1-stepend-40.0" / "python_stats");
  fs::create_directories(tmp.path / "run-a" / "system");
  fs::create_directories(tmp.path / "logs");
  auto parent = discover_profile(tmp.path);
  REQUIRE_FALSE(parent.ok());
  CHECK(parent.error().message.ends_with("; profiles inside it: " + (tmp.path / "run-a").string() + ", " +
                                         (tmp.path / "run-b").string()));
  // A profiler directory (smdebug's names) without stats yet is still one.
  fs::path bare_profiler = tmp.path / "run-a" / "framework" / "pytorch" / "pyinstrument";
  fs::create_directories(bare_profiler / "0-algo-1");
  auto bare = discover_profile(bare_profiler);
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.error().message.starts_with("no python profiling stats under"));

  touch(tmp.path / "file");
  auto file = discover_profile(tmp.path / "file");
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().message.find("not a directory") != std::string::npos);
}

TEST_CASE("sprof's bootstrap files are recognised by where record puts them", "[profile]") {
  using sprof::store::is_sprof_bootstrap_file;
  CHECK(is_sprof_bootstrap_file("/tmp/sprof-bootstrap-a1B2c3/sprof/_torch.py"));
  CHECK(is_sprof_bootstrap_file("/var/tmp/x/sprof-bootstrap-Zz9xYq/sitecustomize.py"));
  CHECK(is_sprof_bootstrap_file("/data/prof/markers/python/sprof/_cprofile.py"));  // profiles before
  CHECK(is_sprof_bootstrap_file("/data/prof/markers/python/sitecustomize.py"));
  CHECK_FALSE(is_sprof_bootstrap_file("/tmp/sprof-bootstrap-a1B2c3/other/_torch.py"));
  CHECK_FALSE(is_sprof_bootstrap_file("/tmp/sprof-bootstrap-toolong1/sprof/_torch.py"));
  CHECK_FALSE(is_sprof_bootstrap_file("/data/sprof/_torch.py"));
  CHECK_FALSE(is_sprof_bootstrap_file("/usr/lib/python3/sitecustomize.py"));
  CHECK_FALSE(is_sprof_bootstrap_file("/tmp/sprof-bootstrap-a1B2c3/sprof/_torch.pyc"));
  CHECK_FALSE(is_sprof_bootstrap_file("sitecustomize.py"));
}
