#pragma once
// `sprof record`: start a command (or attach to a pid), sample the Python stacks of it and,
// optionally, of its descendants until it exits, and write the profile directory.
//
// RecordHooks are the seams later stages plug into without touching the sampling loop: the
// bootstrap adds environment and an inherited marker fd before the fork and drains it during
// housekeeping; a system-metrics thread starts in on_start and stops in on_finish; per-interval
// statistics are built in on_finish from the closed sample logs.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sprof/manifest.hpp"
#include "sprof/result.hpp"

namespace sprof::launch {

struct RecordOptions {
  std::vector<std::string> command;  // launch mode: argv of the command
  pid_t attach_pid = 0;              // attach mode (command empty)
  double duration_s = 0;             // stop sampling after this long; 0: until the target exits
  double rate_hz = 100;
  bool blocking = false;             // pause Python threads while reading them
  bool subprocesses = false;         // follow descendants
  std::filesystem::path output_dir;  // empty: sprof-<pid>-<UTC time> in the current directory
  bool force = false;                // replace an existing output directory
  uint64_t seed = 0;                 // jitter seed; 0: from the clock
};

// What the launched command gets in addition to sprof's own environment.
struct ChildSetup {
  std::vector<std::pair<std::string, std::string>> env;  // set (or replace) these variables
  std::vector<int> inherit_fds;                           // keep these descriptors open across exec
};

struct RecordProgress {
  double elapsed_s = 0;
  uint64_t samples = 0;  // valid thread samples so far
  uint64_t invalid = 0;
  int processes = 0;     // processes being sampled now
  int threads = 0;       // Python threads seen in them so far
};

struct RecordContext {
  std::filesystem::path output_dir;
  pid_t target_pid = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC
  // True once sprof was asked to stop (a signal after the command exited, or in attach mode):
  // long work in on_finish stops early and leaves what `stats-dirs` can finish.
  std::function<bool()> interrupted = [] { return false; };
};

class RecordHooks {
 public:
  virtual ~RecordHooks() = default;
  // Launch mode, before the fork. The output directory exists already.
  virtual Status prepare_child(const std::filesystem::path& /*output_dir*/, ChildSetup& /*setup*/) { return {}; }
  // The target runs (launch) or was found (attach).
  virtual void on_start(const RecordContext& /*context*/) {}
  // From the sampling thread between ticks, every ~20 ms. Keep it short.
  virtual void on_housekeeping(int64_t /*now_ns*/) {}
  // A process was attached (or re-attached after exec) and its samples go to its sample log.
  virtual void on_process(const store::ManifestProcess& /*process*/) {}
  // About four times a second while sampling.
  virtual void on_progress(const RecordProgress& /*progress*/) {}
  // The name sprof's own costs are reported under ("markers", "system_monitor", ...), for the
  // CPU time record measures in this hook's calls; empty: not reported.
  virtual std::string cost_name() const { return {}; }
  // Sampling has stopped and the sample logs are closed; add sections to the manifest
  // (written after this returns) or derived files to the directory.
  virtual Status on_finish(const std::filesystem::path& /*output_dir*/, store::Manifest& /*manifest*/) { return {}; }
};

struct RecordResult {
  std::filesystem::path output_dir;
  store::Manifest manifest;
  // What `sprof record` exits with: the launched command's status (128+N for signal N),
  // 127/126 when it could not be started; 0 after an attach. When the command succeeded but the
  // profile could not be written whole (write_errors) or nothing could be read for want of
  // permission: 1. A signal that stopped the writing of statistics after the command: 128+N.
  int exit_code = 0;
  bool sampled_any = false;  // at least one process became a Python sprof could read
  // Files that could not be written (each names the file and why): the profile is readable up to
  // the last complete sample-log chunk, and `stats-dirs` finishes what the manifest left open.
  std::vector<std::string> write_errors;
};

// A process's argv from /proc/PID/cmdline; empty when unreadable.
std::vector<std::string> cmdline_of(pid_t pid);

// The default output directory name: sprof-<pid>-<YYYYMMDDTHHMMSSZ>.
std::string default_output_name(pid_t pid, int64_t realtime_ns);

// This node's name in node ids ("<pid>-<host>" under framework/): SageMaker's current_host (its
// resource config, or SM_CURRENT_HOST), else the host name.
std::string node_host();
// Its id under system/ ("algo-<n>", all smdebug's reader accepts): the host when it is one,
// else algo-<GROUP_RANK or NODE_RANK + 1>, else algo-1.
std::string system_node_id(const std::string& host);

}  // namespace sprof::launch
