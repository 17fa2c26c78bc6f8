#pragma once
// Writes framework trace events exactly as smdebug's TimelineFileWriter does, so smdebug's readers
// and sprof's read them alike:
//   - the open file is <profile>/framework/<node_id>_<suffix>.tmp; on close it is renamed to
//     <profile>/framework/pevents/<UTC YYYYMMDDHH of end>/<end_us>_<node_id>_<suffix>, end_us being
//     the end of the latest event written;
//   - a JSON array, one record per line; every file starts with the process_name/process_sort_index
//     metadata of pid 0 carrying start_time_since_epoch_in_micros (the writer's base time, the same
//     for all its files); event "ts" is relative to it;
//   - each lane (training phase) is a pid, numbered 1, 2, … for the writer's life and announced in
//     each file (process_name + process_sort_index) before its first event there;
//   - rotation before a write (now = end of that event) or on poll(): when round(now − last close)
//     in seconds exceeds rotate_interval_s, the file exceeds rotate_max_bytes, or the UTC hour changed.
// Not thread-safe: one owner thread writes (record's marker/GPU threads should hand events to it).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/modes.hpp"
#include "sprof/result.hpp"
#include "sprof/trace_events.hpp"

namespace sprof::store {

struct TraceWriterOptions {
  std::filesystem::path profile_dir;
  std::string node_id;                                     // e.g. "905-algo-1"; must not contain '_'
  std::string suffix = std::string(kPythonTimelineSuffix); // pythontimeline.json, model_timeline.json, …
  int64_t base_us = 0;                  // start_time_since_epoch_in_micros; event ts are relative to it
  int64_t rotate_max_bytes = 10485760;  // smdebug's RotateMaxFileSizeInBytes default
  double rotate_interval_s = 60.0;      // smdebug's RotateFileCloseIntervalInSeconds default
  bool rotate_on_hour_change = true;    // keep each file inside one UTC hour directory
};

class TraceWriter {
 public:
  // Fails (usage) when node_id is empty or contains '_' or '/', which readers could not parse back.
  static Result<TraceWriter> create(TraceWriterOptions options);
  TraceWriter(TraceWriter&& other) noexcept;
  TraceWriter& operator=(TraceWriter&& other) noexcept;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();  // closes (errors are logged)

  // A complete event ("X") on `lane`, absolute epoch µs.
  Status complete(std::string_view lane, std::string_view name, int64_t start_us, int64_t dur_us,
                  const TraceArgs& args = {});
  // An instant event ("i") with scope 'g', 'p' or 't'. smdebug's reader ignores instants.
  Status instant(std::string_view lane, std::string_view name, int64_t ts_us, char scope = 't',
                 const TraceArgs& args = {});
  // "B"/"E" pairs; the reader matches them per lane, last opened first.
  Status begin(std::string_view lane, std::string_view name, int64_t ts_us, const TraceArgs& args = {});
  Status end(std::string_view lane, int64_t ts_us, const TraceArgs& args = {});

  // The rotation check smdebug's writer thread makes when it wakes: call now and then when idle.
  Status poll(int64_t now_us);
  // Closes the open file (renaming it into pevents/). Idempotent.
  Status close();

  const TraceWriterOptions& options() const { return options_; }
  // Final paths of the files closed so far.
  const std::vector<std::filesystem::path>& files() const { return files_; }
  std::filesystem::path temp_path() const;

 private:
  explicit TraceWriter(TraceWriterOptions options);
  Status write_record(std::string_view lane, bool announce_lane, int64_t end_us, const std::string& record);
  bool should_rotate(int64_t now_us) const;
  Status open_file(int64_t now_us);
  int64_t lane_pid(std::string_view lane);

  TraceWriterOptions options_;
  std::FILE* file_ = nullptr;
  int64_t file_bytes_ = 0;
  int64_t file_hour_ = -1;               // UTC epoch hour the open file's events fall in
  int64_t last_end_us_ = 0;              // latest event end written (names the file on close)
  int64_t last_close_us_ = 0;
  std::vector<std::string> lanes_;       // lane i has pid i + 1
  std::vector<bool> announced_;          // per lane: announced in the open file
  std::vector<std::filesystem::path> files_;
};

// Step and dataloader events as smdebug's PyTorch/TF hooks write them; the rules read exactly these.
std::string step_lane(Mode mode);  // "Step:ModeKeys.TRAIN" (lane and event name)

// {"name": "Step:ModeKeys.TRAIN", "ph": "X", …, "args": {"pid": <os pid>, "step_num": "<step>"}}
Status write_step(TraceWriter& writer, Mode mode, int64_t step, int64_t start_us, int64_t end_us,
                  int64_t os_pid);

// PyTorch dataloader lanes read by the Dataloader rule and the report:
//   DataLoaderIterInitialize: "<iterator class>.__init__", args num_workers, pin_memory, pid;
//   DataLoaderIter:           "<iterator class>::GetNext" (one batch fetched by the training process);
//   DataLoaderWorker:         "<name>" (work done in a worker process), args pid (the worker's), worker_id.
// `iterator_class` is e.g. "_MultiProcessingDataLoaderIter" or "_SingleProcessDataLoaderIter".
Status write_dataloader_init(TraceWriter& writer, std::string_view iterator_class, int64_t start_us,
                             int64_t end_us, int64_t num_workers, bool pin_memory, int64_t os_pid);
Status write_dataloader_next(TraceWriter& writer, std::string_view iterator_class, int64_t start_us,
                             int64_t end_us, int64_t os_pid);
Status write_dataloader_worker(TraceWriter& writer, std::string_view name, int64_t start_us, int64_t end_us,
                               int64_t worker_pid, int64_t worker_id);

}  // namespace sprof::store
