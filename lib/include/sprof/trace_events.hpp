#pragma once
// Framework trace events in SageMaker Debugger's layout: Chrome-trace JSON arrays under
//   <profile>/framework/pevents/<YYYYMMDDHH>/<end_us>_<node_id>_<suffix>
// (suffix pythontimeline.json, model_timeline.json, horovod_timeline.json,
// smdataparallel_timeline.json). The reader follows smdebug's TraceEventParser: "X" events,
// "B"/"E" pairs matched per lane, "M" metadata (lane names, start_time_since_epoch_in_micros),
// "i" instants ignored, node ids "<x>-algo-<n>" normalised to "algo-<n>-<x>".

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

// A value of an event's "args" object. Nested objects and arrays are kept as their JSON text.
using ArgValue = std::variant<std::monostate, bool, int64_t, double, std::string>;

struct TraceArg {
  std::string key;
  ArgValue value;
};

class TraceArgs {
 public:
  TraceArgs() = default;
  TraceArgs(std::initializer_list<TraceArg> items) : items_(items) {}

  void set(std::string key, ArgValue value);
  void reserve(size_t n) { items_.reserve(n); }
  const ArgValue* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // The value as text the way Python's str() shows it ("5", "1.5", "True", the string itself).
  std::optional<std::string> text(std::string_view key) const;
  // An integer value, or a string holding one ("7"); otherwise none.
  std::optional<int64_t> integer(std::string_view key) const;
  const std::vector<TraceArg>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<TraceArg> items_;
};

// Which of smdebug's parsers reads a file; decides TraceEvent::file_type().
enum class TraceSource { python_timeline, model_timeline, horovod, smdataparallel };

struct TraceEvent {
  std::string name;
  std::string lane;         // the Chrome-trace process name of the event's pid (smdebug's event_phase)
  int64_t start_us = 0;     // absolute epoch µs
  int64_t end_us = 0;
  std::string node_id;      // normalised ("algo-1-51" for a file of node "51-algo-1")
  int64_t lane_pid = 0;     // the trace's pid field (lane index)
  int64_t pid = 0;          // args.pid when present (the OS pid), else lane_pid
  TraceArgs args;
  TraceSource source = TraceSource::python_timeline;

  int64_t duration_us() const { return end_us - start_us; }
  // smdebug's file_type: "PythontimelineMetrics", "DetailedframeworkMetrics", "" (Horovod),
  // "SMDataParallelMetrics". Rules tell Horovod events apart by the empty string.
  const char* file_type() const;
};

inline constexpr std::string_view kPythonTimelineSuffix = "pythontimeline.json";
inline constexpr std::string_view kModelTimelineSuffix = "model_timeline.json";
inline constexpr std::string_view kHorovodTimelineSuffix = "horovod_timeline.json";
inline constexpr std::string_view kSmDataParallelTimelineSuffix = "smdataparallel_timeline.json";

// smdebug's trace file name rules: ends ".json", path contains "pevents", at least 3 '_'-separated
// fields in the name; the first is the end time (µs) of the file's last event, the second the node id.
struct TraceFileName {
  int64_t end_us = 0;
  std::string node_id;  // as written (not normalised)
  std::string suffix;   // the rest after the second '_'
};
std::optional<TraceFileName> parse_trace_file_name(const std::filesystem::path& path);
// The parser a suffix selects (pythontimeline, model_timeline, horovod, smdataparallel); none for
// other files (merged timelines, tensorboard traces), which the reader skips.
std::optional<TraceSource> trace_source_for(std::string_view file_name);

// "51-algo-1" -> "algo-1-51" (smdebug's regex `(.*)-(algo.*)`); anything else unchanged.
std::string normalize_node_id(std::string_view node_id);

// A process's node id in its spellings: "<pid or rank>-<host>" (framework files, stats
// directories, sprof.json) and "algo-<n>-<pid>" (smdebug's normalised trace events); digits alone
// are a process on a host the id does not name (host ""). The process is "" when the id names
// none (then the whole id is the host).
struct NodeIdParts {
  std::string process;
  std::string host;
};
NodeIdParts split_node_id(std::string_view node_id);

// smdebug's TraceEventParser: state (lane names, start time, open "B" events) carries over between
// the files one parser reads, as it does in smdebug, so read files in timestamp order.
class TraceEventParser {
 public:
  explicit TraceEventParser(TraceSource source) : source_(source) {}

  // Parses one file's JSON text and appends its events. `node_id` as in the file name.
  Status parse(std::string_view json_text, std::string_view node_id, const std::string& source_name,
               std::vector<TraceEvent>& out);

 private:
  struct OpenEvent {
    std::string name;
    int64_t ts = 0;
    TraceArgs args;
  };
  TraceSource source_;
  int64_t start_us_ = 0;
  std::vector<std::pair<int64_t, std::string>> lanes_;        // pid -> process name
  std::vector<std::pair<int64_t, std::vector<OpenEvent>>> stacks_;  // pid -> open "B" events
};

// One file with a fresh parser of the type its name selects (pythontimeline if unknown).
Result<std::vector<TraceEvent>> read_trace_file(const std::filesystem::path& path, const ProfileFiles& files = local_files());

struct TraceReadResult {
  std::vector<TraceEvent> events;
  std::vector<std::string> warnings;  // files skipped (unreadable JSON), named
};
// Every trace file under <profile>/framework (smdebug's selection), ordered by file timestamp then
// path, each read by the parser of its type. A file that is not valid JSON is skipped with a warning,
// as smdebug skips it. No framework directory: empty.
Result<TraceReadResult> read_trace_events(const std::filesystem::path& profile_dir, const ProfileFiles& files = local_files());

// smdebug's get_events_within_time_range: events that overlap [start_us, end_us] (end >= start and
// start <= end).
std::vector<TraceEvent> filter_trace_events(const std::vector<TraceEvent>& events, int64_t start_us,
                                            int64_t end_us);

}  // namespace sprof::store
