#pragma once
// Reading a live CPython process's threads and stacks from outside it
// (process_vm_readv; ptrace only to pause threads in blocking mode).
// This header is the contract between pyframes (which implements it) and the
// sampler/record code (which calls it). Extend it; change it only together with its callers.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::pyframes {

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = 0;
  std::string str() const;  // "3.11.7"
};

// What a code object tells us; stable for the life of the process. `id` is a small dense number
// assigned by the reader per distinct (filename, name, first_line), so callers can intern
// (code id, line) pairs cheaply on the sampling path.
struct CodeInfo {
  uint32_t id = 0;
  std::string filename;  // co_filename
  std::string name;      // co_qualname on 3.11+, co_name before
  int32_t first_line = 0;  // co_firstlineno (cProfile/pstats key)
};

struct Frame {
  uint32_t code_id = 0;  // CodeInfo::id
  int32_t line = 0;      // line being executed (first_line when unknown)
};

struct ThreadStack {
  uint64_t python_thread_id = 0;  // threading.get_ident() (pthread_t)
  int32_t native_tid = 0;         // kernel TID; 0 when it could not be determined
  bool on_cpu = false;            // /proc/PID/task/TID/stat state 'R', read before any pause
  bool holds_gil = false;
  std::vector<Frame> frames;      // leaf (innermost) first
  bool truncated = false;         // deeper than kMaxFrames (4096): only the innermost frames kept
  int64_t interpreter_id = 0;     // PyInterpreterState id (0: main interpreter)
};

struct SampleOptions {
  bool blocking = false;  // pause the threads that have a PyThreadState while reading
  // Non-blocking only: how often a thread's stack is read again when it changed during the
  // read or failed a consistency check, before it is dropped as invalid.
  int retries = 2;
};

// Counters a caller reports as sampling health.
struct ReadStats {
  uint64_t thread_samples = 0;  // thread stacks attempted: returned + invalid
  uint64_t invalid = 0;  // torn or spliced chains, failed reads: dropped, not returned
  uint64_t retried = 0;  // re-reads of stacks that changed under a non-blocking read or failed a check
  uint64_t truncated = 0;  // stacks deeper than the frame cap (returned, innermost frames only)
  uint64_t remote_reads = 0;  // process_vm_readv calls made
  uint64_t remote_regions = 0;  // remote memory regions they read (the main cost of a sample)
  uint64_t remote_bytes = 0;    // bytes they copied
  uint64_t proc_reads = 0;      // /proc files read for run states
};

class PythonProcess;

// One read of every thread's stack, as `sprof dump` shows it.
struct StackSnapshot {
  std::vector<ThreadStack> stacks;
  ReadStats stats;
  double wall_us = 0;  // what the first read cost the reading thread (retries left out)
  double cpu_us = 0;
};

class PythonProcess {
 public:
  virtual ~PythonProcess() = default;

  // Find the interpreter in `pid` (libpython or the executable, symbols or .PyRuntime,
  // version from memory/binary). Fails with not_python when `pid` is not CPython, unsupported
  // for versions sprof cannot read (naming the supported ones), permission with remedies when
  // the OS refuses. The caller retries during interpreter start-up.
  static Result<std::unique_ptr<PythonProcess>> attach(pid_t pid);

  virtual pid_t pid() const = 0;
  virtual const PythonVersion& version() const = 0;

  // Read every Python thread's stack once. Invalid stacks are dropped and counted in stats.
  // Fails (io) when the process has gone away. The target may not have initialised its
  // interpreter yet: then `out` is empty and the call succeeds. Blocking mode uses ptrace,
  // which binds the paused threads to the calling thread: call sample() from one thread.
  virtual Status sample(const SampleOptions& options, std::vector<ThreadStack>& out,
                        ReadStats& stats) = 0;

  // The code object behind a Frame::code_id returned by sample().
  virtual const CodeInfo& code(uint32_t code_id) const = 0;

  // Thread name from threading._active (slow: call when a new thread appears, not per sample).
  // glibc reuses pthread_t values, so treat (python_thread_id, native_tid) as the thread's
  // identity when caching names. Python 2 threads have no name here.
  virtual std::optional<std::string> thread_name(uint64_t python_thread_id) = 0;
};

// Reads every thread's stack; a read that tore a stack (non-blocking) is made again up to
// `retries` times, keeping the last read's stacks and the first read's cost.
Result<StackSnapshot> read_snapshot(PythonProcess& process, const SampleOptions& options, int retries);

}  // namespace sprof::pyframes
