#pragma once
// Shared by the pstats tests: the installed CPythons, real cProfile output generated once per
// test run, and the comparison of a StatsTable with what Python's pstats reports (as JSON from
// tests/unit/pstats/pstats_json.py).

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>
#include <sys/wait.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sprof/pstats.hpp"

namespace pstats_test {

namespace fs = std::filesystem;
using sprof::store::StatsTable;

inline fs::path script_dir() { return fs::path(SPROF_SOURCE_DIR) / "tests/unit/pstats"; }

inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

struct CommandResult {
  int status = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (stderr goes to the test's log).
inline CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

struct Interpreter {
  std::string label;  // "3.8", "3.13", "debian-3.11"
  std::string path;
};

// Every CPython 3.8+ that pyenv has here, and Debian's python3.11 when present.
inline const std::vector<Interpreter>& interpreters() {
  static const std::vector<Interpreter> found = [] {
    std::vector<Interpreter> list;
    const char* pyenv_root = std::getenv("PYENV_ROOT");
    fs::path versions = fs::path(pyenv_root ? pyenv_root : "/root/.pyenv") / "versions";
    std::error_code ec;
    std::map<std::pair<int, int>, Interpreter> by_version;
    for (const auto& dir : fs::directory_iterator(versions, ec)) {
      int major = 0, minor = 0;
      if (std::sscanf(dir.path().filename().c_str(), "%d.%d", &major, &minor) != 2) continue;
      fs::path python = dir.path() / "bin/python3";
      if (major != 3 || minor < 8 || !fs::exists(python)) continue;
      by_version[{major, minor}] = {fmt::format("{}.{}", major, minor), python.string()};
    }
    for (auto& [version, interpreter] : by_version) list.push_back(interpreter);
    if (fs::exists("/usr/bin/python3.11")) list.push_back({"debian-3.11", "/usr/bin/python3.11"});
    return list;
  }();
  return found;
}

inline std::string system_python() { return "/usr/bin/python3"; }

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "sprof-pstats-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Real profiles written by tests/unit/pstats/workload.py under each interpreter, variants
// 0..2: <label>-v<variant>.cprofile / .stats / .profile. Generated at test time into the build
// tree, once for all the test processes ctest starts (under a lock), and again whenever the
// workload script changes.
struct Workloads {
  fs::path dir;
  std::vector<Interpreter> made;  // interpreters whose workload ran
  fs::path file(const std::string& label, int variant, const std::string& kind) const {
    return dir / fmt::format("{}-v{}.{}", label, variant, kind);
  }
};

inline const Workloads& workloads() {
  static const Workloads w = [] {
    Workloads w;
    w.dir = fs::path(SPROF_BINARY_DIR) / "test-data/pstats-workloads";
    fs::create_directories(w.dir);
    int lock = ::open((w.dir.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(lock >= 0);
    ::flock(lock, LOCK_EX);
    fs::path script = script_dir() / "workload.py";
    fs::path stamp = w.dir / "made";
    std::error_code ec;
    bool fresh = fs::exists(stamp) && fs::last_write_time(stamp, ec) > fs::last_write_time(script);
    if (!fresh) {
      std::string labels;
      for (const Interpreter& interpreter : interpreters()) {
        bool ok = true;
        for (int variant = 0; variant < 3 && ok; ++variant) {
          fs::path prefix = w.dir / fmt::format("{}-v{}", interpreter.label, variant);
          ok = run(fmt::format("{} {} {} {}", quote(interpreter.path), quote(script.string()),
                               variant, quote(prefix.string())))
                   .status == 0;
        }
        if (ok) labels += interpreter.label + "\n";
      }
      FILE* f = std::fopen(stamp.c_str(), "w");
      REQUIRE(f != nullptr);
      std::fputs(labels.c_str(), f);
      std::fclose(f);
    }
    ::close(lock);  // releases the flock
    std::ifstream in(stamp);
    std::string label;
    while (std::getline(in, label)) {
      for (const Interpreter& interpreter : interpreters()) {
        if (interpreter.label == label) w.made.push_back(interpreter);
      }
    }
    return w;
  }();
  return w;
}

// pstats_json.py MODE FILES... under `python`.
inline nlohmann::json python_pstats(const std::string& python, const std::string& mode,
                                    const std::vector<fs::path>& files) {
  std::string command = fmt::format("{} {} {}", quote(python),
                                    quote((script_dir() / "pstats_json.py").string()), mode);
  for (const auto& f : files) command += " " + quote(f.string());
  CommandResult result = run(command);
  INFO(command);
  REQUIRE(result.status == 0);
  return nlohmann::json::parse(result.out);
}

// A str from pstats_json.py: plain, or the hex of its bytes when it holds lone surrogates.
inline std::string text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  std::string hex = value.at("surrogatepass_hex").get<std::string>();
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

inline double parse_repr(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

inline bool same_float(double actual, const std::string& expected_repr) {
  double expected = parse_repr(expected_repr);
  if (std::isnan(expected)) return std::isnan(actual);
  return std::bit_cast<uint64_t>(actual) == std::bit_cast<uint64_t>(expected);
}

// The table equals what pstats holds: same functions in the same order, same callers in the
// same order, counts equal, times bit-identical, totals as pstats computes them.
inline void check_matches_python(const StatsTable& table, const nlohmann::json& expected) {
  const auto& entries = expected.at("entries");
  REQUIRE(table.size() == entries.size());
  CHECK(table.total_calls() == expected.at("total_calls").get<int64_t>());
  CHECK(table.primitive_calls() == expected.at("prim_calls").get<int64_t>());
  CHECK(same_float(table.total_tt(), expected.at("total_tt").get<std::string>()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const auto& [key, stats] = table.entries()[i];
    INFO("function #" << i << ": " << e.dump().substr(0, 300));
    REQUIRE(key.file == text(e[0]));
    REQUIRE(key.line == e[1].get<int64_t>());
    REQUIRE(key.name == text(e[2]));
    REQUIRE(stats.cc == e[3].get<int64_t>());
    REQUIRE(stats.nc == e[4].get<int64_t>());
    REQUIRE(same_float(stats.tt, e[5].get<std::string>()));
    REQUIRE(same_float(stats.ct, e[6].get<std::string>()));
    const auto& callers = e[7];
    REQUIRE(stats.callers.size() == callers.size());
    for (size_t c = 0; c < callers.size(); ++c) {
      const auto& ce = callers[c];
      const auto& [caller, value] = stats.callers[c];
      INFO("caller #" << c << ": " << ce.dump());
      REQUIRE(caller.file == text(ce[0]));
      REQUIRE(caller.line == ce[1].get<int64_t>());
      REQUIRE(caller.name == text(ce[2]));
      if (ce[3].is_array()) {
        REQUIRE_FALSE(value.is_count);
        REQUIRE(value.nc == ce[3][0].get<int64_t>());
        REQUIRE(value.cc == ce[3][1].get<int64_t>());
        REQUIRE(same_float(value.tt, ce[3][2].get<std::string>()));
        REQUIRE(same_float(value.ct, ce[3][3].get<std::string>()));
      } else {
        REQUIRE(value.is_count);
        REQUIRE(value.nc == ce[3].get<int64_t>());
      }
    }
  }
}

inline std::string read_bytes(const fs::path& path) {
  std::string bytes;
  auto* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.append(buffer, n);
  std::fclose(f);
  return bytes;
}

inline void write_bytes(const fs::path& path, const std::string& bytes) {
  auto* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

}  // namespace pstats_test
