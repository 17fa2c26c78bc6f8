#pragma once
// The markers.log format (docs/markers.md): the messages of the marker channel as typed values,
// and the parser that reads them from the byte stream the target writes (live, from the pipe)
// or from markers/markers.log after the fact. Markers come from sprof's bootstrap inside the
// target: steps, modes and phases (explicit API or automatic PyTorch detection), pause/resume,
// counters, instants, DataLoader lanes, process start and hook close.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sprof/modes.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

inline constexpr int kMarkerProtocolVersion = 1;

// A step's mode is one of smdebug's ModeKeys: sprof::Mode's first four (is_step_mode).

enum class InstantScope : uint8_t { global, process, thread };  // Chrome trace "s": g, p, t
enum class DataLoaderOutcome : uint8_t { ok, stop, error };     // next() returned, StopIteration, raised

// hello: the first marker of every process (at interpreter start, or in a forked child).
struct Hello {
  int version = 0;
  int32_t parent_pid = 0;
  std::string reason;           // "start" (interpreter started) or "fork" (forked child)
  std::string python_version;   // "3.11.2"
  std::string executable;       // sys.executable
};
struct StepBegin {
  Mode mode = Mode::global;
  int64_t step = 0;         // the mode's own step number (smdebug's mode_steps[mode])
  int64_t global_step = 0;  // counts the steps of every mode (smdebug's hook.step)
};
struct StepEnd {
  Mode mode = Mode::global;
  int64_t step = 0;
  int64_t global_step = 0;
};
struct ForwardPassEnd {
  Mode mode = Mode::global;
  int64_t step = 0;
  int64_t global_step = 0;
};
struct ModeChange {
  Mode mode = Mode::global;
};
struct Pause {
  std::string reason;  // "pause" (pause()) or "stop" (set_state("stop"))
};
struct Resume {
  std::string reason;  // "resume" or "run"
};
struct Counter {
  std::string domain;
  std::string name;
  double value = 0;
};
struct Instant {
  std::string domain;
  std::string name;
  InstantScope scope = InstantScope::process;
};
// A span of work the program timed through the API (MXNet's profiler.Task, Frame and Event):
// the marker's own time is the end.
enum class RangeKind : uint8_t { task, frame, event };
const char* to_string(RangeKind kind);  // "task", "frame", "event"
struct Range {
  int64_t begin_ns = 0;
  RangeKind kind = RangeKind::task;
  std::string domain;
  std::string name;
};
struct Framework {
  std::string name;     // "pytorch"
  std::string version;  // torch.__version__
};
// A DataLoader iterator was created (smdebug's DataLoaderIterInitialize lane).
struct DataLoaderInit {
  int64_t begin_ns = 0;          // the marker's own time is the end
  int64_t iterator = 0;          // per-process iterator id, referenced by DataLoaderNext
  std::string iterator_class;    // "_MultiProcessingDataLoaderIter"
  int32_t num_workers = 0;
  bool pin_memory = false;
};
// One next(iterator) call: the time the training loop waited for a batch (DataLoaderIter lane).
struct DataLoaderNext {
  int64_t begin_ns = 0;
  int64_t iterator = 0;
  DataLoaderOutcome outcome = DataLoaderOutcome::ok;
};
// A DataLoader worker process started or finished its loop; the marker's pid is the worker's.
struct WorkerStart {
  int64_t worker_id = 0;
  int32_t parent_pid = 0;
};
struct WorkerStop {
  int64_t worker_id = 0;
  int32_t parent_pid = 0;
};
// Hook close (atexit or sprof.close()): the open step ends, POST_HOOK_CLOSE begins.
struct Close {
  std::string reason;  // "exit" or "api"
};
// A problem the bootstrap reported (API misuse, failed instrumentation), also printed by the
// target on stderr with a "sprof:" prefix.
struct ReportedError {
  std::string key;
  std::string message;
};
// Markers the target had to drop because the pipe was full.
struct Dropped {
  int64_t count = 0;
};

using MarkerData = std::variant<Hello, StepBegin, StepEnd, ForwardPassEnd, ModeChange, Pause, Resume,
                                Counter, Instant, Framework, DataLoaderInit, DataLoaderNext,
                                WorkerStart, WorkerStop, Close, ReportedError, Dropped, Range>;

struct Marker {
  int64_t t_ns = 0;  // CLOCK_MONOTONIC nanoseconds (the samples' clock)
  int32_t pid = 0;
  int32_t tid = 0;   // kernel thread id (threading.get_native_id())
  MarkerData data;
};

const char* kind_name(const MarkerData& data);  // the wire keyword: "hello", "sb", "se", ...

// One line without its '\n'. The error says what is wrong with it (no line number).
Result<Marker> parse_marker_line(std::string_view line);

// Incremental parser for the byte stream of the pipe: lines may arrive split across reads.
// Bad lines are skipped and counted; the first few problems are kept for the caller to report.
class MarkerParser {
 public:
  struct Stats {
    uint64_t lines = 0;    // complete lines seen
    uint64_t markers = 0;  // lines that became markers
    uint64_t skipped = 0;  // malformed, unknown or oversized lines, and lines of unknown versions
  };

  explicit MarkerParser(size_t max_line_bytes = 8192) : max_line_(max_line_bytes) {}

  // Parses the complete lines in `bytes` (after any held partial line) into `out`.
  void feed(std::string_view bytes, std::vector<Marker>& out);
  // End of stream: a held partial line (the writer died mid-line, which an atomic pipe write
  // rules out, or the stream was cut) is counted as skipped.
  void finish();

  const Stats& stats() const { return stats_; }
  const std::vector<std::string>& problems() const { return problems_; }  // at most kMaxProblems

  static constexpr size_t kMaxProblems = 20;

 private:
  void take_line(std::string_view line, std::vector<Marker>& out);
  void problem(std::string message);

  size_t max_line_;
  std::string partial_;
  bool discarding_ = false;  // inside an oversized line: skip to the next '\n'
  Stats stats_;
  std::vector<std::string> problems_;
  std::vector<int32_t> unsupported_pids_;  // pids whose hello declared a version we do not read
};

// Parses a whole stream at once.
std::vector<Marker> parse_markers(std::string_view text, MarkerParser::Stats* stats = nullptr,
                                  std::vector<std::string>* problems = nullptr);

}  // namespace sprof::store
