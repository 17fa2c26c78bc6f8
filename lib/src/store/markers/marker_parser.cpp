// Parser of the marker wire format (docs/markers.md): one record per '\n'-terminated line,
// fields separated by single spaces, "<kind> <t_ns> <pid> <tid> <fields...>". Extra trailing
// fields are ignored so that a later protocol may add some; unknown kinds are skipped.

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/markers.hpp"

namespace sprof::store {
namespace {

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (start <= line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return fields;
}

template <class Int>
Result<Int> parse_int(std::string_view text, const char* what, Int min = std::numeric_limits<Int>::min()) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min) {
    return make_error(ErrorKind::bad_input, "bad {} '{}'", what, text);
  }
  return value;
}

Result<double> parse_double(std::string_view text, const char* what) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return make_error(ErrorKind::bad_input, "bad {} '{}'", what, text);
  }
  return value;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string field: "-" is the empty string, otherwise percent-encoded UTF-8.
Result<std::string> parse_text(std::string_view text, const char* what) {
  if (text.empty()) return make_error(ErrorKind::bad_input, "empty {} field", what);
  if (text == "-") return std::string();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    int hi = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
    int lo = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return make_error(ErrorKind::bad_input, "bad escape in {} '{}'", what, text);
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

Result<Mode> parse_mode_field(std::string_view text) {
  auto mode = parse_step_mode(text);
  if (!mode) return make_error(ErrorKind::bad_input, "unknown mode '{}'", text);
  return *mode;
}

struct StepFields {
  Mode mode;
  int64_t step;
  int64_t global_step;
};

Result<StepFields> parse_step_fields(const std::vector<std::string_view>& f, size_t at) {
  SPROF_TRY(Mode mode, parse_mode_field(f[at]));
  SPROF_TRY(int64_t step, parse_int<int64_t>(f[at + 1], "step", 0));
  SPROF_TRY(int64_t global_step, parse_int<int64_t>(f[at + 2], "global step", 0));
  return StepFields{mode, step, global_step};
}

// Fields after the common four, per kind.
Result<MarkerData> parse_data(std::string_view kind, const std::vector<std::string_view>& f) {
  const size_t n = f.size() - 4;
  auto need = [&](size_t count) -> Status {
    if (n < count) {
      return make_error(ErrorKind::bad_input, "'{}' needs {} fields after the pid and tid, got {}",
                        kind, count, n);
    }
    return {};
  };
  auto optional_text = [&](const char* what) -> Result<std::string> {
    if (n == 0) return std::string();
    return parse_text(f[4], what);
  };
  if (kind == "hello") {
    SPROF_TRY_STATUS(need(5));
    Hello h;
    SPROF_TRY(h.version, parse_int<int>(f[4], "version", 0));
    SPROF_TRY(h.parent_pid, parse_int<int32_t>(f[5], "parent pid", 0));
    SPROF_TRY(h.reason, parse_text(f[6], "reason"));
    SPROF_TRY(h.python_version, parse_text(f[7], "python version"));
    SPROF_TRY(h.executable, parse_text(f[8], "executable"));
    return MarkerData{std::move(h)};
  }
  if (kind == "sb" || kind == "se") {
    SPROF_TRY_STATUS(need(3));
    SPROF_TRY(StepFields s, parse_step_fields(f, 4));
    if (kind == "sb") return MarkerData{StepBegin{s.mode, s.step, s.global_step}};
    return MarkerData{StepEnd{s.mode, s.step, s.global_step}};
  }
  if (kind == "ph") {
    SPROF_TRY_STATUS(need(4));
    if (f[4] != "forwardpassend") return make_error(ErrorKind::bad_input, "unknown phase '{}'", f[4]);
    SPROF_TRY(StepFields s, parse_step_fields(f, 5));
    return MarkerData{ForwardPassEnd{s.mode, s.step, s.global_step}};
  }
  if (kind == "mode") {
    SPROF_TRY_STATUS(need(1));
    SPROF_TRY(Mode mode, parse_mode_field(f[4]));
    return MarkerData{ModeChange{mode}};
  }
  if (kind == "pause") {
    SPROF_TRY(std::string reason, optional_text("reason"));
    return MarkerData{Pause{std::move(reason)}};
  }
  if (kind == "resume") {
    SPROF_TRY(std::string reason, optional_text("reason"));
    return MarkerData{Resume{std::move(reason)}};
  }
  if (kind == "close") {
    SPROF_TRY(std::string reason, optional_text("reason"));
    return MarkerData{Close{std::move(reason)}};
  }
  if (kind == "ctr") {
    SPROF_TRY_STATUS(need(3));
    Counter c;
    SPROF_TRY(c.domain, parse_text(f[4], "domain"));
    SPROF_TRY(c.name, parse_text(f[5], "name"));
    SPROF_TRY(c.value, parse_double(f[6], "counter value"));
    return MarkerData{std::move(c)};
  }
  if (kind == "mark") {
    SPROF_TRY_STATUS(need(3));
    Instant i;
    SPROF_TRY(i.domain, parse_text(f[4], "domain"));
    SPROF_TRY(i.name, parse_text(f[5], "name"));
    if (f[6] == "g") {
      i.scope = InstantScope::global;
    } else if (f[6] == "p") {
      i.scope = InstantScope::process;
    } else if (f[6] == "t") {
      i.scope = InstantScope::thread;
    } else {
      return make_error(ErrorKind::bad_input, "unknown scope '{}'", f[6]);
    }
    return MarkerData{std::move(i)};
  }
  if (kind == "fw") {
    SPROF_TRY_STATUS(need(2));
    Framework fw;
    SPROF_TRY(fw.name, parse_text(f[4], "framework"));
    SPROF_TRY(fw.version, parse_text(f[5], "version"));
    return MarkerData{std::move(fw)};
  }
  if (kind == "dli") {
    SPROF_TRY_STATUS(need(5));
    DataLoaderInit d;
    SPROF_TRY(d.begin_ns, parse_int<int64_t>(f[4], "begin time", 0));
    SPROF_TRY(d.iterator, parse_int<int64_t>(f[5], "iterator id", 0));
    SPROF_TRY(d.iterator_class, parse_text(f[6], "iterator class"));
    SPROF_TRY(d.num_workers, parse_int<int32_t>(f[7], "num_workers", 0));
    SPROF_TRY(int pin, parse_int<int>(f[8], "pin_memory", 0));
    d.pin_memory = pin != 0;
    return MarkerData{std::move(d)};
  }
  if (kind == "rng") {
    SPROF_TRY_STATUS(need(4));
    Range r;
    SPROF_TRY(r.begin_ns, parse_int<int64_t>(f[4], "begin time", 0));
    if (f[5] == "task") {
      r.kind = RangeKind::task;
    } else if (f[5] == "frame") {
      r.kind = RangeKind::frame;
    } else if (f[5] == "event") {
      r.kind = RangeKind::event;
    } else {
      return make_error(ErrorKind::bad_input, "unknown range kind '{}'", f[5]);
    }
    SPROF_TRY(r.domain, parse_text(f[6], "domain"));
    SPROF_TRY(r.name, parse_text(f[7], "name"));
    return MarkerData{std::move(r)};
  }
  if (kind == "dln") {
    SPROF_TRY_STATUS(need(3));
    DataLoaderNext d;
    SPROF_TRY(d.begin_ns, parse_int<int64_t>(f[4], "begin time", 0));
    SPROF_TRY(d.iterator, parse_int<int64_t>(f[5], "iterator id", 0));
    if (f[6] == "ok") {
      d.outcome = DataLoaderOutcome::ok;
    } else if (f[6] == "stop") {
      d.outcome = DataLoaderOutcome::stop;
    } else if (f[6] == "error") {
      d.outcome = DataLoaderOutcome::error;
    } else {
      return make_error(ErrorKind::bad_input, "unknown outcome '{}'", f[6]);
    }
    return MarkerData{d};
  }
  if (kind == "wstart" || kind == "wstop") {
    SPROF_TRY_STATUS(need(2));
    SPROF_TRY(int64_t worker_id, parse_int<int64_t>(f[4], "worker id", -1));
    SPROF_TRY(int32_t parent, parse_int<int32_t>(f[5], "parent pid", 0));
    if (kind == "wstart") return MarkerData{WorkerStart{worker_id, parent}};
    return MarkerData{WorkerStop{worker_id, parent}};
  }
  if (kind == "err") {
    SPROF_TRY_STATUS(need(2));
    ReportedError e;
    SPROF_TRY(e.key, parse_text(f[4], "key"));
    SPROF_TRY(e.message, parse_text(f[5], "message"));
    return MarkerData{std::move(e)};
  }
  if (kind == "drop") {
    SPROF_TRY_STATUS(need(1));
    SPROF_TRY(int64_t count, parse_int<int64_t>(f[4], "count", 0));
    return MarkerData{Dropped{count}};
  }
  return make_error(ErrorKind::bad_input, "unknown marker kind '{}'", kind);
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (text.size() > 80) out += "...";
  return out;
}

}  // namespace

const char* kind_name(const MarkerData& data) {
  static constexpr std::array<const char*, std::variant_size_v<MarkerData>> kNames = {
      "hello", "sb", "se", "ph", "mode", "pause", "resume", "ctr", "mark", "fw",
      "dli", "dln", "wstart", "wstop", "close", "err", "drop", "rng"};
  return kNames[data.index()];
}

const char* to_string(RangeKind kind) {
  switch (kind) {
    case RangeKind::task: return "task";
    case RangeKind::frame: return "frame";
    case RangeKind::event: return "event";
  }
  return "task";
}

Result<Marker> parse_marker_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto fields = split_fields(line);
  if (fields.size() < 4) {
    return make_error(ErrorKind::bad_input, "expected '<kind> <t_ns> <pid> <tid> ...', got '{}'",
                      printable(line));
  }
  Marker marker;
  SPROF_TRY(marker.t_ns, parse_int<int64_t>(fields[1], "timestamp", 0));
  SPROF_TRY(marker.pid, parse_int<int32_t>(fields[2], "pid", 1));
  SPROF_TRY(marker.tid, parse_int<int32_t>(fields[3], "tid", 0));
  SPROF_TRY(marker.data, parse_data(fields[0], fields));
  return marker;
}

void MarkerParser::problem(std::string message) {
  if (problems_.size() < kMaxProblems) problems_.push_back(std::move(message));
}

void MarkerParser::take_line(std::string_view line, std::vector<Marker>& out) {
  ++stats_.lines;
  if (line.empty()) {
    ++stats_.skipped;
    problem(fmt::format("line {}: empty line", stats_.lines));
    return;
  }
  auto marker = parse_marker_line(line);
  if (!marker.ok()) {
    ++stats_.skipped;
    problem(fmt::format("line {}: {}", stats_.lines, marker.error().message));
    return;
  }
  int32_t pid = marker->pid;
  if (const auto* hello = std::get_if<Hello>(&marker->data); hello && hello->version != kMarkerProtocolVersion) {
    if (std::find(unsupported_pids_.begin(), unsupported_pids_.end(), pid) == unsupported_pids_.end()) {
      unsupported_pids_.push_back(pid);
      problem(fmt::format("line {}: pid {} speaks marker protocol version {}, this sprof reads "
                          "version {}; its markers are skipped",
                          stats_.lines, pid, hello->version, kMarkerProtocolVersion));
    }
  } else if (hello) {
    // A new interpreter under this pid (exec) that speaks our version.
    std::erase(unsupported_pids_, pid);
  }
  if (!unsupported_pids_.empty() &&
      std::find(unsupported_pids_.begin(), unsupported_pids_.end(), pid) != unsupported_pids_.end()) {
    ++stats_.skipped;
    return;
  }
  ++stats_.markers;
  out.push_back(std::move(marker).value());
}

void MarkerParser::feed(std::string_view bytes, std::vector<Marker>& out) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    std::string_view piece = bytes.substr(0, newline);
    bool complete = newline != std::string_view::npos;
    bytes = complete ? bytes.substr(newline + 1) : std::string_view();
    if (discarding_) {
      if (complete) discarding_ = false;
      continue;
    }
    if (partial_.size() + piece.size() > max_line_) {
      ++stats_.lines;
      ++stats_.skipped;
      problem(fmt::format("line {}: longer than {} bytes; skipped", stats_.lines, max_line_));
      partial_.clear();
      discarding_ = !complete;
      continue;
    }
    if (!complete) {
      partial_.append(piece);
      break;
    }
    if (partial_.empty()) {
      take_line(piece, out);
    } else {
      partial_.append(piece);
      std::string line = std::move(partial_);
      partial_.clear();
      take_line(line, out);
    }
  }
}

void MarkerParser::finish() {
  if (!partial_.empty()) {  // (an oversized line being discarded was counted already)
    ++stats_.lines;
    ++stats_.skipped;
    problem(fmt::format("line {}: incomplete last line '{}'", stats_.lines, printable(partial_)));
  }
  partial_.clear();
  discarding_ = false;
}

std::vector<Marker> parse_markers(std::string_view text, MarkerParser::Stats* stats,
                                  std::vector<std::string>* problems) {
  MarkerParser parser;
  std::vector<Marker> out;
  parser.feed(text, out);
  parser.finish();
  if (stats) *stats = parser.stats();
  if (problems) *problems = parser.problems();
  return out;
}

}  // namespace sprof::store
