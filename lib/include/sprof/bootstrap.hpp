#pragma once
// Getting sprof's bootstrap into a target and its markers back out.
//
// The Python files (lib/src/bootstrap/python: sprof's sitecustomize and the `sprof` package) are
// compiled into libsprof, so a recorder never depends on an installed copy matching its version.
// prepare() writes them into a directory, opens the marker pipe and returns the environment the
// target needs; the recorder forks, makes the pipe's write end inheritable in the child
// (MarkerChannel::inherit_in_child), execs the target with that environment, and calls drain()
// on a timer (every 10-50 ms, e.g. from the sampling loop). Do not block in poll() on read_fd():
// a reader waiting on the pipe makes every marker write in the target pay for its wake-up
// (measured: 1.1 us per write without a waiting reader, 4 us with one). The pipe holds about
// 20 000 markers. `--no-inject` means: do not call prepare().

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sprof/markers.hpp"
#include "sprof/profiling_window.hpp"
#include "sprof/result.hpp"

namespace sprof::bootstrap {

// The environment variables the bootstrap reads (docs/markers.md).
inline constexpr const char* kEnvMarkerFd = "SPROF_MARKER_FD";        // inherited write end
inline constexpr const char* kEnvMarkerInode = "SPROF_MARKER_INODE";  // that pipe's inode
inline constexpr const char* kEnvMarkerPath = "SPROF_MARKER_PATH";    // /proc/<recorder>/fd/<n>
inline constexpr const char* kEnvTorch = "SPROF_TORCH";               // "0": no PyTorch hooks
inline constexpr const char* kEnvStepFn = "SPROF_STEP_FN";            // --step-fn names, comma separated
inline constexpr const char* kEnvStepFnMode = "SPROF_STEP_FN_MODE";   // --step-fn-mode
// Deterministic mode (--python-profiler cprofile), see CprofileOptions.
inline constexpr const char* kEnvPythonProfiler = "SPROF_PYTHON_PROFILER";  // "cprofile"
inline constexpr const char* kEnvProfileDir = "SPROF_PROFILE_DIR";          // absolute profile directory
inline constexpr const char* kEnvNodeHost = "SPROF_NODE_HOST";              // node id = "<pid>-<host>"
inline constexpr const char* kEnvCprofileTimer = "SPROF_CPROFILE_TIMER";    // total_time|cpu_time|off_cpu_time|default
inline constexpr const char* kEnvWindow = "SPROF_WINDOW";                   // ProfilingWindow::spec()

struct EmbeddedFile {
  std::string_view path;     // relative, '/'-separated: "sitecustomize.py", "sprof/__init__.py"
  std::string_view content;
};

// The bootstrap's Python files as built into this libsprof.
std::span<const EmbeddedFile> python_files();

// Writes python_files() under dir (created if needed; existing files are replaced through a
// temporary file and rename, so a running interpreter never reads half a file). `package_only`:
// the `sprof` package alone, without sitecustomize.py (for a Python that is not a target).
Status write_python_files(const std::filesystem::path& dir, bool package_only = false);

// The recorder's end of the marker pipe. Move-only; closes both ends when destroyed. Keep it
// alive until the target and its children are gone: SPROF_MARKER_PATH points at write_fd() in
// this process.
class MarkerChannel {
 public:
  // A pipe with room for `capacity` bytes where the kernel allows it (F_SETPIPE_SZ; about 20 000
  // markers at 1 MiB), both ends close-on-exec, the read end non-blocking.
  static Result<MarkerChannel> open(size_t capacity = 1 << 20);

  MarkerChannel(MarkerChannel&& other) noexcept;
  MarkerChannel& operator=(MarkerChannel&& other) noexcept;
  MarkerChannel(const MarkerChannel&) = delete;
  MarkerChannel& operator=(const MarkerChannel&) = delete;
  ~MarkerChannel();

  int read_fd() const { return read_fd_; }
  int write_fd() const { return write_fd_; }
  uint64_t inode() const { return inode_; }
  std::string proc_path() const;  // "/proc/<this pid>/fd/<write_fd>"

  // In the forked child, before exec: clears FD_CLOEXEC on the write end so the target inherits
  // it under the same number. Async-signal-safe. Returns 0 or an errno value. (posix_spawn users:
  // posix_spawn_file_actions_adddup2(&a, write_fd(), write_fd()) does the same on glibc >= 2.29.)
  int inherit_in_child() const noexcept;

  // Reads everything available now without blocking and appends the parsed markers to out.
  // Call it periodically rather than after poll() (see the top of this header).
  // Returns the number of bytes read (0: nothing pending).
  Result<size_t> drain(std::vector<store::Marker>& out);
  // After the last drain(): accounts for an incomplete last line.
  void finish() { parser_.finish(); }
  const store::MarkerParser& parser() const { return parser_; }

 private:
  MarkerChannel(int read_fd, int write_fd, uint64_t inode);
  void close_all() noexcept;

  int read_fd_ = -1;
  int write_fd_ = -1;
  uint64_t inode_ = 0;
  store::MarkerParser parser_;
};

// Deterministic mode: the bootstrap runs cProfile in the target within `window` and writes
// <profile_dir>/framework/<pytorch|python>/cprofile/<pid>-<host>/<stats dir>/python_stats.
struct CprofileOptions {
  std::filesystem::path profile_dir;  // made absolute by cprofile_environment()
  window::ProfilingWindow window;     // default: every interval
  window::CprofileTimer timer = window::CprofileTimer::total_time;
  std::string node_host;              // empty: this host as `record` names it in node ids
};

// The variables that turn deterministic mode on (SPROF_PYTHON_PROFILER ... SPROF_WINDOW). A
// recorder that calls prepare() passes CprofileOptions instead; one that sets up the target's
// environment on its own adds these.
std::vector<std::pair<std::string, std::string>> cprofile_environment(const CprofileOptions& options);

struct PrepareOptions {
  bool torch = true;  // automatic PyTorch detection (SPROF_TORCH)
  // The PYTHONPATH the target would have had; nullopt: this process's own PYTHONPATH.
  std::optional<std::string> pythonpath;
  std::optional<CprofileOptions> cprofile;  // deterministic mode; nullopt: off
  // --step-fn: the bootstrap wraps these functions so each call is a step (SPROF_STEP_FN), of
  // step_fn_mode unless a torch module's .training says otherwise.
  std::vector<std::string> step_functions;
  std::string step_fn_mode = "train";
};

struct BootstrapEnv {
  std::filesystem::path python_dir;  // where the Python files were written
  MarkerChannel channel;
  // Variables to set in the target's environment: PYTHONPATH (python_dir first), SPROF_*.
  std::vector<std::pair<std::string, std::string>> variables;

  // `base` (e.g. environ) with `variables` set, as "NAME=value" strings for execve.
  std::vector<std::string> environment(char* const* base) const;
};

// Writes the Python files into dir, opens the marker channel and computes the environment.
Result<BootstrapEnv> prepare(const std::filesystem::path& dir, const PrepareOptions& options = {});

}  // namespace sprof::bootstrap
