#pragma once
// `sprof top`: a running Python job at a glance, as py-spy top shows it. A session samples the
// target (a pid, or a command it starts with sprof's bootstrap injected, so steps and modes are
// known) on a thread of its own, and any number of views are taken from it: functions by own and
// total time (percentages over the time since the previous view, times since the start), and a
// header of processes, threads, samples, CPU use, GPU utilization (NVML, when there is one), the
// current step and mode and the step rate.
// Stopping the session leaves the target running.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::live {

enum class TopSort { own, total, name };

struct TopOptions {
  pid_t pid = 0;                     // attach to this process, or
  std::vector<std::string> command;  // start this one
  double rate_hz = 100;
  bool subprocesses = false;  // also the target's descendants (found once a second)
  bool idle = false;          // count threads that are not running
  bool gil = false;           // only threads holding the GIL
  bool inject = true;         // the command gets sprof's bootstrap (steps, modes)
  std::string nvml_library = "libnvidia-ml.so.1";
};

struct TopRow {
  std::string function;
  std::string file;
  int32_t line = 0;      // the function's first line
  double own_share = 0;  // of the samples since the previous view (0..1)
  double total_share = 0;
  double own_s = 0;      // since the start
  double total_s = 0;
};

struct TopHeader {
  pid_t pid = 0;
  std::string python;  // "3.11.7"
  int processes = 0;   // being sampled
  int threads = 0;     // in the last samples
  uint64_t samples = 0;
  uint64_t window_samples = 0;  // thread samples counted since the previous view
  double elapsed_s = 0;
  double cpu_share = -1;        // CPU of the sampled processes over the last view, in cores; < 0: unknown
  bool gpu_known = false;       // NVML answered (no GPU when false)
  std::vector<double> gpu_utilization;  // per GPU, %, now
  std::optional<int64_t> step;  // the newest step begun, in its mode's numbering
  std::string mode;             // its mode ("train", ...)
  double steps_per_s = -1;      // over the last 10 s; < 0: unknown
  std::string status;           // "waiting for Python", "running", "exited with status 0"
};

struct TopView {
  TopHeader header;
  std::vector<TopRow> rows;  // sorted, all of them
};

class TopSession {
 public:
  // Usage errors: neither or both of pid and command, a rate outside 1..10000. Attach errors
  // (not Python, permission) once the target is known not to become one.
  static Result<std::unique_ptr<TopSession>> start(const TopOptions& options);
  virtual ~TopSession() = default;
  virtual TopView view(TopSort sort) = 0;
  // The target (the attached process, or the launched command) has exited.
  virtual bool finished() const = 0;
  // The launched command's exit status (128+N for signal N); unset before it exits or in attach mode.
  virtual std::optional<int> exit_status() const = 0;
  // Stops sampling; the target runs on.
  virtual void stop() = 0;
  // After stop(), when top ends for a signal or a closed output: the launched command ends as
  // `record` ends it. It gets a second to act on a signal its terminal also sent it, then
  // `signal`, `grace_s` seconds, SIGTERM, two seconds, SIGKILL; it is reaped and its status kept
  // (exit_status()). Attach mode: nothing (the process is not top's).
  virtual void end_command(int signal, double grace_s) = 0;
};

}  // namespace sprof::live
