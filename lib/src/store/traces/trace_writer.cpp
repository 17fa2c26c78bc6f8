// smdebug-compatible trace file writer (see sprof/trace_writer.hpp).

#include "sprof/layout.hpp"
#include "sprof/trace_writer.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <system_error>

#include <spdlog/spdlog.h>

#include "common/json_text.hpp"

namespace fs = std::filesystem;

namespace sprof::store {

namespace {

int64_t utc_hour_of(int64_t epoch_us) {
  int64_t seconds = epoch_us >= 0 ? epoch_us / 1000000 : -((-epoch_us + 999999) / 1000000);
  return seconds >= 0 ? seconds / 3600 : -((-seconds + 3599) / 3600);
}

void append_arg_value(std::string& out, const ArgValue& value) {
  if (std::holds_alternative<std::monostate>(value)) {
    out += "null";
  } else if (auto b = std::get_if<bool>(&value)) {
    out += *b ? "true" : "false";
  } else if (auto i = std::get_if<int64_t>(&value)) {
    out += std::to_string(*i);
  } else if (auto d = std::get_if<double>(&value)) {
    append_python_float(out, *d);
  } else {
    append_json_string(out, std::get<std::string>(value));
  }
}

void append_args(std::string& out, const TraceArgs& args) {
  if (args.empty()) return;
  out += ", \"args\": {";
  bool first = true;
  for (const auto& item : args.items()) {
    if (!first) out += ", ";
    first = false;
    append_json_string(out, item.key);
    out += ": ";
    append_arg_value(out, item.value);
  }
  out += "}";
}

}  // namespace

Result<TraceWriter> TraceWriter::create(TraceWriterOptions options) {
  if (options.node_id.empty() || options.node_id.find_first_of("_/") != std::string::npos) {
    return make_error(ErrorKind::usage, "trace node id '{}' must be non-empty and contain no '_' or '/'",
                      options.node_id);
  }
  if (options.suffix.empty() || options.suffix.find('/') != std::string::npos) {
    return make_error(ErrorKind::usage, "trace file suffix '{}' is not a file name", options.suffix);
  }
  return TraceWriter(std::move(options));
}

TraceWriter::TraceWriter(TraceWriterOptions options) : options_(std::move(options)) {
  last_close_us_ = options_.base_us;
  last_end_us_ = options_.base_us;
}

TraceWriter::TraceWriter(TraceWriter&& other) noexcept { *this = std::move(other); }

TraceWriter& TraceWriter::operator=(TraceWriter&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) (void)close();
    options_ = std::move(other.options_);
    file_ = other.file_;
    other.file_ = nullptr;
    file_bytes_ = other.file_bytes_;
    file_hour_ = other.file_hour_;
    last_end_us_ = other.last_end_us_;
    last_close_us_ = other.last_close_us_;
    lanes_ = std::move(other.lanes_);
    announced_ = std::move(other.announced_);
    files_ = std::move(other.files_);
  }
  return *this;
}

TraceWriter::~TraceWriter() {
  if (auto status = close(); !status.ok()) spdlog::error("{}", status.error().message);
}

fs::path TraceWriter::temp_path() const {
  return options_.profile_dir / kFrameworkDir / (options_.node_id + "_" + options_.suffix + ".tmp");
}

int64_t TraceWriter::lane_pid(std::string_view lane) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i] == lane) return static_cast<int64_t>(i) + 1;
  }
  lanes_.emplace_back(lane);
  announced_.push_back(false);
  return static_cast<int64_t>(lanes_.size());
}

bool TraceWriter::should_rotate(int64_t now_us) const {
  if (file_ == nullptr) return false;
  // smdebug: int(round(now - last_close)) in seconds (Python rounds halves to even, as nearbyint does).
  double seconds = std::nearbyint(static_cast<double>(now_us - last_close_us_) / 1e6);
  if (seconds > options_.rotate_interval_s) return true;
  if (file_bytes_ > options_.rotate_max_bytes) return true;
  if (options_.rotate_on_hour_change && utc_hour_of(now_us) != file_hour_) return true;
  return false;
}

Status TraceWriter::open_file(int64_t now_us) {
  fs::path path = temp_path();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", path.parent_path().string(), ec.message());
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) return make_error(ErrorKind::io, "cannot open {}: {}", path.string(), std::strerror(errno));
  file_hour_ = utc_hour_of(now_us);
  file_bytes_ = 0;
  last_end_us_ = INT64_MIN;
  std::fill(announced_.begin(), announced_.end(), false);
  std::string head = "[\n";
  head += fmt::format(
      "{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {{\"start_time_since_epoch_in_micros\": "
      "{}}}}},\n",
      options_.base_us);
  head += "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"sort_index\": 0}},\n";
  if (std::fwrite(head.data(), 1, head.size(), file_) != head.size()) {
    return make_error(ErrorKind::io, "cannot write {}: {}", path.string(), std::strerror(errno));
  }
  file_bytes_ = static_cast<int64_t>(head.size());
  return {};
}

Status TraceWriter::write_record(std::string_view lane, bool announce_lane, int64_t end_us, const std::string& record) {
  if (should_rotate(end_us)) {
    SPROF_TRY_STATUS(close());
    last_close_us_ = end_us;
  }
  if (file_ == nullptr) SPROF_TRY_STATUS(open_file(end_us));
  std::string text;
  if (announce_lane) {
    int64_t pid = lane_pid(lane);
    if (!announced_[pid - 1]) {
      text += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) + ", \"args\": {\"name\": ";
      append_json_string(text, lane);
      text += "}},\n";
      text += fmt::format("{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {0}, \"args\": {{\"sort_index\": "
                          "{0}}}}},\n",
                          pid);
      announced_[pid - 1] = true;
    }
  }
  text += record;
  text += ",\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    return make_error(ErrorKind::io, "cannot write {}: {}", temp_path().string(), std::strerror(errno));
  }
  file_bytes_ += static_cast<int64_t>(text.size());
  if (end_us > last_end_us_) last_end_us_ = end_us;
  return {};
}

Status TraceWriter::complete(std::string_view lane, std::string_view name, int64_t start_us, int64_t dur_us,
                             const TraceArgs& args) {
  int64_t pid = lane_pid(lane);
  std::string record = "{\"name\": ";
  append_json_string(record, name);
  record += fmt::format(", \"pid\": {}, \"ph\": \"X\", \"ts\": {}, \"dur\": {}", pid, start_us - options_.base_us,
                        dur_us);
  append_args(record, args);
  record += "}";
  return write_record(lane, true, start_us + dur_us, record);
}

Status TraceWriter::instant(std::string_view lane, std::string_view name, int64_t ts_us, char scope,
                            const TraceArgs& args) {
  if (scope != 'g' && scope != 'p' && scope != 't') {
    return make_error(ErrorKind::usage, "instant event scope '{}' is not g, p or t", scope);
  }
  int64_t pid = lane_pid(lane);
  std::string record = "{\"name\": ";
  append_json_string(record, name);
  record += fmt::format(", \"pid\": {}, \"ph\": \"i\", \"ts\": {}, \"s\": \"{}\"", pid, ts_us - options_.base_us, scope);
  append_args(record, args);
  record += "}";
  return write_record(lane, true, ts_us, record);
}

Status TraceWriter::begin(std::string_view lane, std::string_view name, int64_t ts_us, const TraceArgs& args) {
  int64_t pid = lane_pid(lane);
  std::string record = "{\"name\": ";
  append_json_string(record, name);
  record += fmt::format(", \"pid\": {}, \"ph\": \"B\", \"ts\": {}", pid, ts_us - options_.base_us);
  append_args(record, args);
  record += "}";
  return write_record(lane, true, ts_us, record);
}

Status TraceWriter::end(std::string_view lane, int64_t ts_us, const TraceArgs& args) {
  int64_t pid = lane_pid(lane);
  std::string record = fmt::format("{{\"name\": \"\", \"pid\": {}, \"ph\": \"E\", \"ts\": {}", pid,
                                   ts_us - options_.base_us);
  append_args(record, args);
  record += "}";
  return write_record(lane, true, ts_us, record);
}

Status TraceWriter::poll(int64_t now_us) {
  if (should_rotate(now_us)) {
    SPROF_TRY_STATUS(close());
    last_close_us_ = now_us;
  }
  return {};
}

Status TraceWriter::close() {
  if (file_ == nullptr) return {};
  fs::path temp = temp_path();
  // Replace the last ",\n" with "\n]" (smdebug seeks back two bytes the same way).
  bool ok = std::fseek(file_, -2, SEEK_END) == 0 && std::fwrite("\n]", 1, 2, file_) == 2;
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  if (!ok) return make_error(ErrorKind::io, "cannot finish {}: {}", temp.string(), std::strerror(errno));
  int64_t end_us = last_end_us_;
  fs::path dir = options_.profile_dir / kFrameworkDir / kTraceEventsDir / utc_date_hour(end_us / 1000000);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", dir.string(), ec.message());
  // Two files can end at the same µs (rotation without newer events); never overwrite one.
  fs::path target;
  for (int64_t stamp = end_us;; ++stamp) {
    target = dir / fmt::format("{}_{}_{}", stamp, options_.node_id, options_.suffix);
    if (!fs::exists(target, ec)) break;
  }
  fs::rename(temp, target, ec);
  if (ec) return make_error(ErrorKind::io, "cannot rename {} to {}: {}", temp.string(), target.string(), ec.message());
  files_.push_back(target);
  if (end_us > last_close_us_) last_close_us_ = end_us;
  return {};
}

std::string step_lane(Mode mode) { return "Step:ModeKeys." + std::string(mode_key_name(mode)); }

Status write_step(TraceWriter& writer, Mode mode, int64_t step, int64_t start_us, int64_t end_us, int64_t os_pid) {
  std::string lane = step_lane(mode);
  return writer.complete(lane, lane, start_us, end_us - start_us,
                         TraceArgs{{"pid", os_pid}, {"step_num", std::to_string(step)}});
}

Status write_dataloader_init(TraceWriter& writer, std::string_view iterator_class, int64_t start_us, int64_t end_us,
                             int64_t num_workers, bool pin_memory, int64_t os_pid) {
  return writer.complete("DataLoaderIterInitialize", std::string(iterator_class) + ".__init__", start_us,
                         end_us - start_us,
                         TraceArgs{{"num_workers", num_workers}, {"pin_memory", pin_memory}, {"pid", os_pid}});
}

Status write_dataloader_next(TraceWriter& writer, std::string_view iterator_class, int64_t start_us, int64_t end_us,
                             int64_t os_pid) {
  return writer.complete("DataLoaderIter", std::string(iterator_class) + "::GetNext", start_us, end_us - start_us,
                         TraceArgs{{"pid", os_pid}});
}

Status write_dataloader_worker(TraceWriter& writer, std::string_view name, int64_t start_us, int64_t end_us,
                               int64_t worker_pid, int64_t worker_id) {
  return writer.complete("DataLoaderWorker", name, start_us, end_us - start_us,
                         TraceArgs{{"pid", worker_pid}, {"worker_id", worker_id}});
}

}  // namespace sprof::store
