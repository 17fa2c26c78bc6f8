// Writer of smdebug's system-metrics JSON lines, one file per minute per node (see
// sprof/system_metrics.hpp); system_metrics_reader.cpp reads them.

#include "sprof/layout.hpp"
#include "sprof/system_metrics.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/json_text.hpp"

namespace fs = std::filesystem;

namespace sprof::store {

std::string format_system_metric_line(const SystemRecord& record, std::string_view node_id, int64_t timestamp_us) {
  std::string line;
  line.reserve(128);
  line += "{\"Type\": ";
  append_json_string(line, record.type);
  line += ", \"Name\": ";
  append_json_string(line, record.name);
  line += ", \"Dimension\": ";
  append_json_string(line, record.dimension);
  line += ", \"Value\": ";
  append_python_float(line, record.value);
  line += ", \"NodeId\": ";
  append_json_string(line, node_id);
  line += ", \"Timestamp\": ";
  append_epoch_seconds(line, timestamp_us);
  line += "}";
  return line;
}

SystemMetricsWriter::SystemMetricsWriter(fs::path profile_dir, std::string node_id)
    : profile_dir_(std::move(profile_dir)), node_id_(std::move(node_id)) {}

SystemMetricsWriter::~SystemMetricsWriter() { (void)close(); }

Status SystemMetricsWriter::open_minute(int64_t minute_epoch_s) {
  SPROF_TRY_STATUS(close());
  path_ = system_file_path(profile_dir_, minute_epoch_s, node_id_);
  std::error_code ec;
  fs::create_directories(path_.parent_path(), ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", path_.parent_path().string(), ec.message());
  // Append: a clock step back into an earlier minute continues that minute's file.
  file_ = std::fopen(path_.c_str(), "ab");
  if (file_ == nullptr) {
    return make_error(ErrorKind::io, "cannot open {}: {}", path_.string(), std::strerror(errno));
  }
  minute_ = minute_epoch_s;
  if (std::find(files_.begin(), files_.end(), path_) == files_.end()) files_.push_back(path_);
  return {};
}

Status SystemMetricsWriter::write_tick(int64_t timestamp_us, const std::vector<SystemRecord>& records) {
  if (records.empty()) return {};
  int64_t seconds = timestamp_us >= 0 ? timestamp_us / 1000000 : -((-timestamp_us + 999999) / 1000000);
  int64_t minute = seconds - ((seconds % 60) + 60) % 60;
  if (file_ == nullptr || minute != minute_) SPROF_TRY_STATUS(open_minute(minute));
  buffer_.clear();
  for (const auto& record : records) {
    buffer_ += format_system_metric_line(record, node_id_, timestamp_us);
    buffer_ += '\n';
  }
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size() || std::fflush(file_) != 0) {
    return make_error(ErrorKind::io, "cannot write {}: {}", path_.string(), std::strerror(errno));
  }
  return {};
}

Status SystemMetricsWriter::close() {
  if (file_ == nullptr) return {};
  int rc = std::fclose(file_);
  file_ = nullptr;
  minute_ = -1;
  if (rc != 0) return make_error(ErrorKind::io, "cannot close {}: {}", path_.string(), std::strerror(errno));
  return {};
}

}  // namespace sprof::store
