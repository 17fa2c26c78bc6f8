// store's readers read through ProfileFiles: a profile served from memory, mounted on a root
// that does not exist on disk, reads exactly as the same files on disk do. This is the seam the
// S3 issue puts a remote source under.

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <catch2/catch.hpp>

#include "sprof/layout.hpp"
#include "sprof/manifest.hpp"
#include "sprof/profile.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/sample_log.hpp"
#include "sprof/stats_source.hpp"
#include "sprof/system_metrics.hpp"
#include "sprof/trace_events.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace sprof;
using namespace sprof::store;

namespace {

// A profile held in memory: a copy of a directory tree on disk, served under `root`.
class MemoryFiles final : public ProfileFiles {
 public:
  MemoryFiles(const fs::path& root, const fs::path& copy_of) : root_(root) {
    dirs_.insert(key(root));
    for (const auto& entry : fs::recursive_directory_iterator(copy_of)) {
      fs::path mapped = root / fs::relative(entry.path(), copy_of);
      if (entry.is_directory()) {
        dirs_.insert(key(mapped));
      } else {
        files_[key(mapped)] = test::read_file(entry.path());
      }
    }
  }

  Result<FileKind> status(const fs::path& path) const override {
    count();
    std::string k = key(path);
    if (dirs_.count(k)) return FileKind::directory;
    if (files_.count(k)) return FileKind::file;
    return FileKind::missing;
  }

  Status read(const fs::path& path, std::string& out, size_t max_bytes) const override {
    count();
    auto it = files_.find(key(path));
    if (it == files_.end()) return make_error(ErrorKind::bad_input, "{}: not in memory", path.string());
    if (it->second.size() > max_bytes) return make_error(ErrorKind::bad_input, "{}: too large", path.string());
    out = it->second;
    std::lock_guard lock(mutex_);
    ++reads_;
    return {};
  }

  Result<std::vector<FileEntry>> list(const fs::path& dir) const override {
    count();
    std::string prefix = key(dir) + "/";
    if (!dirs_.count(key(dir))) return make_error(ErrorKind::bad_input, "cannot list {}", dir.string());
    std::vector<FileEntry> out;
    auto add = [&](const std::string& k, FileKind kind) {
      if (k.rfind(prefix, 0) != 0 || k.find('/', prefix.size()) != std::string::npos) return;
      std::string name = k.substr(prefix.size());
      out.push_back(FileEntry{dir / name, name, kind, false, ""});
    };
    for (const auto& d : dirs_) add(d, FileKind::directory);
    for (const auto& [k, bytes] : files_) add(k, FileKind::file);
    std::sort(out.begin(), out.end(), [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
    return out;
  }

  size_t calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  size_t reads() const {
    std::lock_guard lock(mutex_);
    return reads_;
  }

 private:
  static std::string key(const fs::path& path) { return fs::absolute(path).lexically_normal().string(); }
  void count() const {
    std::lock_guard lock(mutex_);
    ++calls_;
  }

  fs::path root_;
  std::set<std::string> dirs_;
  std::map<std::string, std::string> files_;
  mutable std::mutex mutex_;
  mutable size_t calls_ = 0;
  mutable size_t reads_ = 0;
};

// A memory copy of `dir` served at a root that is not on disk.
struct InMemory {
  fs::path root;
  std::shared_ptr<MemoryFiles> files;
  explicit InMemory(const fs::path& dir, const std::string& name) {
    root = fs::temp_directory_path() / "sprof-not-on-disk" / name;
    REQUIRE_FALSE(fs::exists(root));
    files = std::make_shared<MemoryFiles>(root, dir);
  }
  ProfilePath where() const { return ProfilePath(root, files); }
};

}  // namespace

TEST_CASE("trace events and system metrics read the same from a source in memory", "[store][files]") {
  fs::path disk = test::smdebug_fixtures() / "test_traces";
  InMemory mem(disk, "test_traces");

  CHECK(detect(mem.root, *mem.files).framework == detect(disk).framework);
  CHECK(detect(mem.root, *mem.files).system);

  auto local_metrics = read_system_metrics(disk);
  auto mounted_metrics = read_system_metrics(mem.root, *mem.files);
  REQUIRE(local_metrics.ok());
  REQUIRE(mounted_metrics.ok());
  REQUIRE_FALSE(local_metrics->empty());
  REQUIRE(mounted_metrics->size() == local_metrics->size());
  for (size_t i = 0; i < local_metrics->size(); ++i) {
    CHECK((*mounted_metrics)[i].name == (*local_metrics)[i].name);
    CHECK((*mounted_metrics)[i].value == (*local_metrics)[i].value);
  }

  auto local_traces = read_trace_events(disk);
  auto mounted_traces = read_trace_events(mem.root, *mem.files);
  REQUIRE(local_traces.ok());
  REQUIRE(mounted_traces.ok());
  REQUIRE_FALSE(local_traces->events.empty());
  REQUIRE(mounted_traces->events.size() == local_traces->events.size());
  for (size_t i = 0; i < local_traces->events.size(); ++i) {
    CHECK(mounted_traces->events[i].name == local_traces->events[i].name);
    CHECK(mounted_traces->events[i].start_us == local_traces->events[i].start_us);
  }
  CHECK(mem.files->reads() > 0);
}

TEST_CASE("a stats query runs on a source in memory without touching the disk", "[store][files][query]") {
  fs::path disk = test::smdebug_fixtures() / "cprofile_python_stats";
  InMemory mem(disk, "cprofile_python_stats");

  auto local = query::open_stats_source(disk, {});
  auto mounted = query::open_stats_source(mem.where(), {});
  REQUIRE(local.ok());
  REQUIRE(mounted.ok());
  REQUIRE((*mounted)->index().records.size() == (*local)->index().records.size());
  auto local_node = query::cprofile_records_of_node((*local)->index());
  auto mounted_node = query::cprofile_records_of_node((*mounted)->index());
  REQUIRE(local_node.ok());
  REQUIRE(mounted_node.ok());
  auto a = (*local)->aggregate(local_node->records);
  auto b = (*mounted)->aggregate(mounted_node->records);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(b->total_calls == a->total_calls);
  CHECK(b->total_tt == a->total_tt);
  CHECK(b->used.size() == a->used.size());
  CHECK(mem.files->reads() == a->used.size());  // each stats file read once, from memory
}

TEST_CASE("a sprof profile's manifest and sample logs load from a source in memory", "[store][files]") {
  test::TempDir dir;
  fs::path log_file = dir.path() / sample_log_path("4242-host");
  fs::create_directories(log_file.parent_path());
  {
    auto writer = SampleLogWriter::create(log_file);
    REQUIRE(writer.ok());
    SampleLogWriter& w = **writer;
    w.add_process({4242, 1, "3.11.7", "/usr/bin/python3", 1'000'000'000});
    uint32_t fn = w.function("train.py", "train_step", 10);
    uint32_t thread = w.thread(140000000001, 1001);
    for (int tick = 0; tick < 20; ++tick) {
      w.begin_tick(int64_t{2'000'000'000} + tick * int64_t{10'000'000}, 10'000'000);
      std::vector<uint32_t> frames = {w.frame(fn, 11 + tick % 3)};
      w.add_sample(thread, w.stack(frames), 0);
      REQUIRE(w.end_tick().ok());
    }
    REQUIRE(w.close().ok());
  }
  Manifest manifest;
  manifest.state = "complete";
  manifest.target_pid = 4242;
  REQUIRE(write_manifest(dir.path(), manifest).ok());

  InMemory mem(dir.path(), "sprof-profile");
  auto m = read_manifest(mem.root, *mem.files);
  REQUIRE(m.ok());
  CHECK(m->target_pid == 4242);
  auto samples = load_profile_samples(mem.root, std::nullopt, *mem.files);
  REQUIRE(samples.ok());
  REQUIRE(samples->processes.size() == 1);
  CHECK(samples->processes[0].node_id == "4242-host");
  CHECK(samples->processes[0].log.sample_count() == 20);
  CHECK(unfinished_profile_hint(mem.root, *mem.files).empty());

  // Read from the disk, the same path is simply not a directory.
  CHECK_FALSE(load_profile_samples(mem.root).ok());
}
