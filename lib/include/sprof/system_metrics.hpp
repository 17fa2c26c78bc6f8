#pragma once
// System metrics in SageMaker Debugger's layout: JSON lines under
//   <profile>/system/incremental/<YYYYMMDDHH>/<minute epoch s>.<node>.json
// one object per line with the keys Type, Name, Dimension, Value, NodeId, Timestamp
// (Timestamp in float epoch seconds). One file per node per UTC minute.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

struct SystemMetric {
  std::string type;       // "cpu", "gpu", "memory", "i/o", "network", "process"
  std::string name;       // "cpu0", "gpu1", "MemoryUsedPercent", ... ("" when the record has none)
  std::string dimension;  // "CPUUtilization", "GPUMemoryUtilization", "Algorithm", ... (may be "")
  double value = 0.0;
  std::string node_id;    // "algo-1"
  double timestamp = 0.0; // epoch seconds
};

// Units of the bounds given to the range filters, as smdebug's TimeUnits.
enum class TimeUnit { seconds, milliseconds, microseconds, nanoseconds };

// smdebug's convert_utc_timestamp_to_nanoseconds (truncating, evaluated in the same order).
int64_t to_nanoseconds(double t, TimeUnit unit);
// smdebug's convert_utc_timestamp_to_microseconds.
int64_t to_microseconds(double t, TimeUnit unit);

// What smdebug's reader accepts as a system file: `.+/system/.+/(\d{10}).algo-\d+.json`.
struct SystemFileName {
  int64_t minute_epoch_s = 0;  // the file's sort key (µs = this * 1e6)
  std::string node_id;         // "algo-1"
};
std::optional<SystemFileName> parse_system_file_name(const std::filesystem::path& path);

// <profile>/system/incremental/<UTC %Y%m%d%H of the minute>/<minute>.<node>.json
std::filesystem::path system_file_path(const std::filesystem::path& profile_dir, int64_t minute_epoch_s,
                                       std::string_view node_id);

// One file, records in file order. A corrupt or incomplete LAST line is skipped, as smdebug skips it
// (a crash mid-write leaves one); a corrupt line anywhere else is a bad_input error naming file and line.
Result<std::vector<SystemMetric>> read_system_metrics_file(const std::filesystem::path& path, const ProfileFiles& files = local_files());
Result<std::vector<SystemMetric>> parse_system_metrics(std::string_view text, const std::string& source);

// Every system file under <profile>/system (files smdebug would ignore are ignored), in smdebug's
// order: by file timestamp, then path; records in file order. No system directory: empty.
Result<std::vector<SystemMetric>> read_system_metrics(const std::filesystem::path& profile_dir, const ProfileFiles& files = local_files());

// smdebug's get_events_within_time_range: start <= Timestamp <= end (both inclusive, compared in
// nanoseconds), optionally only records of one Type.
std::vector<SystemMetric> filter_system_metrics(const std::vector<SystemMetric>& metrics, double start,
                                                double end, TimeUnit unit, std::string_view type = {});

// One record of a sampling tick, before the writer adds NodeId and the shared Timestamp.
struct SystemRecord {
  std::string type;
  std::string name;
  std::string dimension;
  double value = 0.0;
};

// The JSON line SageMaker's agent writes for one record (key order Type, Name, Dimension, Value,
// NodeId, Timestamp), without the newline.
std::string format_system_metric_line(const SystemRecord& record, std::string_view node_id,
                                      int64_t timestamp_us);

// Writes sampling ticks into minute files. Not thread-safe; one writer per node.
class SystemMetricsWriter {
 public:
  SystemMetricsWriter(std::filesystem::path profile_dir, std::string node_id);
  ~SystemMetricsWriter();
  SystemMetricsWriter(const SystemMetricsWriter&) = delete;
  SystemMetricsWriter& operator=(const SystemMetricsWriter&) = delete;

  // Appends every record of one tick with the same Timestamp, in one write followed by a flush, so a
  // crash can leave at most the last line incomplete. Opens the next minute's file when the minute
  // changes.
  Status write_tick(int64_t timestamp_us, const std::vector<SystemRecord>& records);
  Status close();

  const std::string& node_id() const { return node_id_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

 private:
  Status open_minute(int64_t minute_epoch_s);

  std::filesystem::path profile_dir_;
  std::string node_id_;
  std::FILE* file_ = nullptr;
  std::filesystem::path path_;
  int64_t minute_ = -1;
  std::vector<std::filesystem::path> files_;
  std::string buffer_;
};

}  // namespace sprof::store
