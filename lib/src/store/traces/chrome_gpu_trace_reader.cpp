// Reads the GPU side of a Chrome trace in kineto's conventions (torch.profiler's output, and
// sprof's own `export -f chrome`): GPU work is an "X" event of category kernel, gpu_memcpy or
// gpu_memset whose args name the device and stream; CUDA calls are cuda_runtime / cuda_driver
// events on OS pid/tid; the correlation arg ties the two. Timestamps are µs, relative to
// baseTimeNanoseconds when the trace has it.
//
// Traces run to gigabytes, so the text streams through (a file in pieces, gzip inflated piece by
// piece): a splitter finds the events of traceEvents without a DOM of the file, simdjson's
// On-Demand parser reads each event, and only the compact records stay. Times are read from the
// number's text, exactly, never through a double.

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "sprof/demangle.hpp"
#include "sprof/gpu_trace.hpp"
#include "sprof/gzip.hpp"
#include "sprof/profile_files.hpp"
#include "common/json_text.hpp"

namespace sprof::store {
namespace fs = std::filesystem;
namespace od = simdjson::ondemand;

namespace {

// A compressed trace larger than this is refused (its text would be tens of GB).
constexpr size_t kMaxCompressedBytes = size_t(4) << 30;
// Uncompressed text: beyond this a trace needs a window of steps, not a longer wait.
constexpr size_t kMaxTextBytes = size_t(16) << 30;
// One event or top-level value larger than this is not a kineto trace's.
constexpr size_t kMaxUnitBytes = size_t(64) << 20;
constexpr size_t kPieceBytes = size_t(4) << 20;

// A JSON number's text times 10^shift, as an integer: exact, rounded half away from zero when
// digits remain (as C's llround). false for text that is not a JSON number or a result beyond
// ±9e18.
bool scaled_decimal(std::string_view text, int shift, int64_t& out) {
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  char digits[48];
  size_t count = 0;    // significant digits kept in `digits`
  int64_t scale = shift;  // value = digits * 10^scale
  bool any = false;
  auto take = [&](char c, bool fraction) {
    any = true;
    if (count == 0 && c == '0') {
      if (fraction) --scale;
      return;
    }
    if (count < sizeof digits) {
      digits[count++] = c;
      if (fraction) --scale;
    } else if (!fraction) {
      ++scale;  // beyond 48 digits: far out of range anyway
    }
  };
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') take(text[i++], false);
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') take(text[i++], true);
  }
  if (!any) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    int64_t exponent = 0;
    bool exp_any = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      exp_any = true;
      exponent = std::min<int64_t>(exponent * 10 + (text[i++] - '0'), 100000);
    }
    if (!exp_any) return false;
    scale += exp_negative ? -exponent : exponent;
  }
  if (i != text.size()) return false;
  // Keep count + scale digits (all when scale >= 0); the next one rounds.
  int64_t keep = std::min<int64_t>(int64_t(count), int64_t(count) + scale);
  if (keep > 19) return false;
  __int128 value = 0;
  for (int64_t k = 0; k < keep; ++k) value = value * 10 + (digits[k] - '0');
  if (scale > 0) {
    for (int64_t k = 0; k < scale; ++k) {
      value *= 10;
      if (value > __int128(9'000'000'000'000'000'000LL)) return false;
    }
  } else if (keep >= 0 && keep < int64_t(count) && digits[keep] >= '5') {
    ++value;
  }
  if (value > __int128(9'000'000'000'000'000'000LL)) return false;
  out = int64_t(negative ? -value : value);
  return true;
}

bool micros_text_to_ns(std::string_view text, int64_t& ns) { return scaled_decimal(text, 3, ns); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// An integer arg: an integer, a float rounded, or a string of digits (kineto writes some ids so).
bool integer_of(od::value v, int64_t& out) {
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type == od::json_type::number) return scaled_decimal(trim(v.raw_json_token()), 0, out);
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s) || s.empty()) return false;
    int64_t n = 0;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size()) return false;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9' || n > (INT64_MAX - 9) / 10) return false;
      n = n * 10 + (s[i] - '0');
    }
    out = s[0] == '-' ? -n : n;
    return true;
  }
  return false;
}

// "Memcpy HtoD (Pageable -> Device)" -> HtoD, Pageable, Device.
void split_memcpy_name(std::string_view name, GpuOp& op, GpuTrace& trace) {
  static constexpr std::string_view prefix = "Memcpy ";
  if (name.substr(0, prefix.size()) != prefix) return;
  size_t space = name.find(' ', prefix.size());
  op.copy_kind = trace.intern(name.substr(prefix.size(), space == std::string_view::npos ? std::string_view::npos : space - prefix.size()));
  size_t open = name.find('('), arrow = name.find(" -> "), close = name.rfind(')');
  if (open != std::string_view::npos && arrow != std::string_view::npos && close != std::string_view::npos && open < arrow &&
      arrow < close) {
    op.src_memory = trace.intern(name.substr(open + 1, arrow - open - 1));
    op.dst_memory = trace.intern(name.substr(arrow + 4, close - arrow - 4));
  }
}

std::optional<int64_t> profiler_step(std::string_view name) {
  static constexpr std::string_view prefix = "ProfilerStep#";
  if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size()) return std::nullopt;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

enum class Category { other, kernel, memcpy, memset, runtime, driver, sync, overhead, cpu_op, user_annotation };

Category category_of(std::string_view cat) {
  if (cat == "kernel") return Category::kernel;
  if (cat == "gpu_memcpy") return Category::memcpy;
  if (cat == "gpu_memset") return Category::memset;
  if (cat == "cuda_runtime") return Category::runtime;
  if (cat == "cuda_driver") return Category::driver;
  if (cat == "cuda_sync") return Category::sync;
  if (cat == "overhead" || cat == "Overhead") return Category::overhead;
  if (cat == "cpu_op") return Category::cpu_op;
  if (cat == "user_annotation") return Category::user_annotation;
  return Category::other;
}

// Builds the trace from events and top-level values as the splitter finds them.
class TraceBuilder {
 public:
  explicit TraceBuilder(std::string source) : source_(std::move(source)) { trace_.clock = "epoch"; }

  // One element of traceEvents: `text` is followed by at least simdjson::SIMDJSON_PADDING readable bytes.
  Status event(const char* text, size_t size, size_t capacity) {
    od::document doc;
    if (parser_.iterate(simdjson::padded_string_view(text, size, capacity)).get(doc)) return invalid();
    od::object object;
    if (doc.get_object().get(object)) return {};  // not an object: not an event
    std::string_view ph, cat, name, ts_text, dur_text;
    bool has_ts = false, has_dur = false, has_pid = false, has_tid = false;
    int64_t pid = 0, tid = 0;
    Category category = Category::other;
    bool cat_seen = false, name_seen = false;
    Args args;
    for (auto field : object) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return invalid();
      od::value value;
      if (field.value().get(value)) return invalid();
      if (key == "ph") {
        if (value.get_string().get(ph)) return {};
        if (ph != "X") return {};
      } else if (key == "cat") {
        if (value.get_string().get(cat)) return {};
        category = category_of(cat);
        cat_seen = true;
        if (category == Category::other) return {};
        if (is_cpu(category) && name_seen && !profiler_step(name)) return {};
      } else if (key == "name") {
        std::string_view n;
        if (value.get_string().get(n)) return {};
        name = n;
        name_seen = true;
        if (cat_seen && is_cpu(category) && !profiler_step(name)) return {};
      } else if (key == "ts") {
        ts_text = trim(value.raw_json_token());
        has_ts = true;
      } else if (key == "dur") {
        dur_text = trim(value.raw_json_token());
        has_dur = true;
      } else if (key == "pid") {
        has_pid = integer_of(value, pid);
      } else if (key == "tid") {
        has_tid = integer_of(value, tid);
      } else if (key == "args") {
        od::object a;
        if (value.get_object().get(a) == simdjson::SUCCESS && read_args(a, args) != simdjson::SUCCESS) return invalid();
      }
    }
    if (ph != "X" || category == Category::other) return {};
    if (is_cpu(category) && !profiler_step(name)) return {};
    int64_t ts = 0, dur = 0;
    if (!has_ts || !micros_text_to_ns(ts_text, ts) || std::abs(ts) > kMaxTimeNs ||
        (has_dur && (!micros_text_to_ns(dur_text, dur) || std::abs(dur) > kMaxTimeNs))) {
      ++bad_times_;
      return {};
    }
    if (dur < 0) dur = 0;  // a negative duration is a broken event; keep it as an instant
    int64_t start = ts, end = ts + dur;  // baseTimeNanoseconds is added at the end
    int32_t pid32 = int32_t(std::clamp<int64_t>(has_pid ? pid : 0, INT32_MIN, INT32_MAX));
    int32_t tid32 = int32_t(std::clamp<int64_t>(has_tid ? tid : 0, INT32_MIN, INT32_MAX));
    switch (category) {
      case Category::cpu_op:
      case Category::user_annotation:
        trace_.steps.push_back({*profiler_step(name), start, end});
        break;
      case Category::kernel:
      case Category::memcpy:
      case Category::memset: {
        GpuOp op;
        op.kind = category == Category::kernel ? GpuOpKind::kernel : category == Category::memcpy ? GpuOpKind::memcpy : GpuOpKind::memset;
        // kineto keeps some kernels' mangled names (cutlass's): shown demangled, as CUPTI's are.
        op.name = category == Category::kernel && is_mangled_symbol(name) ? trace_.intern(demangled_symbol(name))
                                                                         : trace_.intern(name);
        op.device = int32_t(std::clamp<int64_t>(args.device.value_or(pid), INT32_MIN, INT32_MAX));
        op.context = args.context.value_or(0);
        op.stream = args.stream.value_or(tid);
        op.correlation = args.correlation.value_or(0);
        op.start_ns = start;
        op.end_ns = end;
        if (op.kind == GpuOpKind::kernel) {
          std::copy(args.grid, args.grid + 3, op.grid);
          std::copy(args.block, args.block + 3, op.block);
          op.registers_per_thread = int32_t(std::clamp<int64_t>(args.registers.value_or(0), 0, INT32_MAX));
          op.shared_memory = args.shared_memory.value_or(0);
        } else {
          op.bytes = std::max<int64_t>(0, args.bytes.value_or(0));
          if (op.kind == GpuOpKind::memcpy) {
            split_memcpy_name(op.name, op, trace_);
          } else {
            size_t open = op.name.find('('), close = op.name.rfind(')');
            if (open != std::string_view::npos && close != std::string_view::npos && open < close) {
              op.dst_memory = trace_.intern(op.name.substr(open + 1, close - open - 1));
            }
          }
        }
        trace_.ops.push_back(op);
        break;
      }
      case Category::runtime:
      case Category::driver: {
        GpuApiCall call;
        call.name = trace_.intern(name);
        call.driver = category == Category::driver;
        call.pid = pid32;
        call.tid = tid32;
        call.correlation = args.correlation.value_or(0);
        call.start_ns = start;
        call.end_ns = end;
        pids_[pid32] = true;
        trace_.api_calls.push_back(call);
        break;
      }
      case Category::sync: {
        GpuSync sync;
        sync.kind = trace_.intern(args.sync_kind.empty() ? name : std::string_view(args.sync_kind));
        sync.stream = args.stream.value_or(-1);
        sync.device = int32_t(std::clamp<int64_t>(args.device.value_or(-1), -1, INT32_MAX));
        sync.context = args.context.value_or(0);
        sync.correlation = args.correlation.value_or(0);
        sync.start_ns = start;
        sync.end_ns = end;
        trace_.syncs.push_back(sync);
        break;
      }
      case Category::overhead:
        trace_.overheads.push_back({trace_.intern(name), pid32, start, end});
        break;
      case Category::other: break;
    }
    return {};
  }

  // A member of the top-level object other than traceEvents: the few kineto puts there are small.
  Status top_level(std::string_view key, std::string_view value_text) {
    if (key != "baseTimeNanoseconds" && key != "deviceProperties" && key != "distributedInfo") return {};
    nlohmann::json v = nlohmann::json::parse(value_text, nullptr, false);
    if (v.is_discarded()) return invalid();
    if (key == "baseTimeNanoseconds") {
      base_ns_ = json_integer(v, 0);
    } else if (key == "deviceProperties" && v.is_array()) {
      for (const nlohmann::json& d : v) {
        if (!d.is_object()) continue;
        GpuDevice device;
        device.id = int32_t(std::clamp<int64_t>(json_integer(d.value("id", nlohmann::json()), 0), 0, INT32_MAX));
        device.name = json_string(d, "name");
        device.uuid = json_string(d, "uuid");
        device.sm_count = json_integer(d.value("numSms", nlohmann::json()), 0);
        device.global_memory_bytes = json_integer(d.value("totalGlobalMem", nlohmann::json()), 0);
        device.compute_major = int32_t(std::clamp<int64_t>(json_integer(d.value("computeMajor", nlohmann::json()), 0), 0, 1000));
        device.compute_minor = int32_t(std::clamp<int64_t>(json_integer(d.value("computeMinor", nlohmann::json()), 0), 0, 1000));
        trace_.devices.push_back(std::move(device));
      }
    } else if (key == "distributedInfo" && v.is_object()) {
      rank_ = int32_t(std::clamp<int64_t>(json_integer(v.value("rank", nlohmann::json()), -1), -1, INT32_MAX));
      world_size_ = int32_t(std::clamp<int64_t>(json_integer(v.value("world_size", nlohmann::json()), -1), -1, INT32_MAX));
    }
    return {};
  }

  Status invalid() const { return make_error(ErrorKind::bad_input, "{}: not valid JSON", source_); }

  GpuTrace finish(bool object_form) {
    if (bad_times_ > 0) {
      trace_.warnings.push_back(fmt::format("{}: {} event(s) without a usable ts/dur skipped", source_, bad_times_));
    }
    if (base_ns_ != 0) {
      auto shift = [&](int64_t& t) { t = std::clamp<int64_t>(t, -kMaxTimeNs, kMaxTimeNs) + std::clamp<int64_t>(base_ns_, -kMaxTimeNs, kMaxTimeNs); };
      for (GpuOp& op : trace_.ops) shift(op.start_ns), shift(op.end_ns);
      for (GpuApiCall& c : trace_.api_calls) shift(c.start_ns), shift(c.end_ns);
      for (GpuSync& s : trace_.syncs) shift(s.start_ns), shift(s.end_ns);
      for (GpuOverhead& o : trace_.overheads) shift(o.start_ns), shift(o.end_ns);
      for (GpuTraceStep& s : trace_.steps) shift(s.start_ns), shift(s.end_ns);
    }
    if (object_form) {
      GpuProcess process;
      process.rank = rank_;
      process.world_size = world_size_;
      if (!pids_.empty()) process.pid = pids_.begin()->first;
      trace_.processes.push_back(process);
    }
    // Kineto puts the launching thread on the runtime call only: give ops and syncs the pid and
    // tid of the call with their correlation id.
    std::unordered_map<int64_t, const GpuApiCall*> by_correlation;
    for (const GpuApiCall& call : trace_.api_calls) {
      if (call.correlation != 0) by_correlation.emplace(call.correlation, &call);
    }
    for (GpuOp& op : trace_.ops) {
      if (auto it = by_correlation.find(op.correlation); it != by_correlation.end()) op.pid = it->second->pid;
    }
    for (GpuSync& sync : trace_.syncs) {
      if (auto it = by_correlation.find(sync.correlation); it != by_correlation.end()) {
        sync.pid = it->second->pid;
        sync.tid = it->second->tid;
      }
    }
    std::sort(trace_.steps.begin(), trace_.steps.end(),
              [](const GpuTraceStep& a, const GpuTraceStep& b) { return a.start_ns < b.start_ns; });
    sort_gpu_trace(trace_);
    return std::move(trace_);
  }

 private:
  // Times beyond this (|ns|) are broken, not a trace's: keeps sums clear of overflow.
  static constexpr int64_t kMaxTimeNs = int64_t(4) << 60;

  struct Args {
    std::optional<int64_t> device, stream, correlation, context, bytes, registers, shared_memory;
    int32_t grid[3] = {0, 0, 0};
    int32_t block[3] = {0, 0, 0};
    std::string sync_kind;
  };

  static bool is_cpu(Category c) { return c == Category::cpu_op || c == Category::user_annotation; }

  static simdjson::error_code read_args(od::object& a, Args& args) {
    for (auto field : a) {
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) return err;
      od::value value;
      if (auto err = field.value().get(value)) return err;
      int64_t n = 0;
      static constexpr std::pair<std::string_view, std::optional<int64_t> Args::*> kIntegers[] = {
          {"device", &Args::device},   {"stream", &Args::stream}, {"correlation", &Args::correlation},
          {"context", &Args::context}, {"bytes", &Args::bytes},   {"registers per thread", &Args::registers},
          {"shared memory", &Args::shared_memory}};
      auto integer = std::find_if(std::begin(kIntegers), std::end(kIntegers), [&](const auto& k) { return k.first == key; });
      if (integer != std::end(kIntegers)) {
        if (integer_of(value, n)) args.*(integer->second) = n;
      } else if (key == "cuda_sync_kind") {
        std::string_view s;
        if (value.get_string().get(s) == simdjson::SUCCESS) args.sync_kind = std::string(s);
      } else if (key == "grid" || key == "block") {
        int32_t* out = key == "grid" ? args.grid : args.block;
        od::array array;
        if (value.get_array().get(array) != simdjson::SUCCESS) continue;
        size_t i = 0;
        for (auto element : array) {
          od::value x;
          if (auto err = element.get(x)) return err;
          if (i < 3 && integer_of(x, n)) out[i] = int32_t(std::clamp<int64_t>(n, 0, INT32_MAX));
          ++i;
        }
      }
    }
    return simdjson::SUCCESS;
  }

  static int64_t json_integer(const nlohmann::json& v, int64_t fallback) {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      return std::isfinite(d) && std::fabs(d) < 9e18 ? int64_t(std::llround(d)) : fallback;
    }
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      char* end = nullptr;
      long long n = std::strtoll(s.c_str(), &end, 10);
      return end != s.c_str() && *end == '\0' ? int64_t(n) : fallback;
    }
    return fallback;
  }
  static std::string json_string(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  }

  std::string source_;
  GpuTrace trace_;
  od::parser parser_;
  int64_t base_ns_ = 0;
  int32_t rank_ = -1, world_size_ = -1;
  size_t bad_times_ = 0;
  std::map<int32_t, bool> pids_;
};

// Finds, in text that arrives in pieces, the elements of the trace's traceEvents array (the
// object form, or the bare array form of the Trace Event Format) and the other top-level
// members, tracking only strings and nesting; each event is parsed in place. The buffer holds
// the unit in progress (an event, a key and its value) and the newest piece, no more.
class TraceSplitter {
 public:
  TraceSplitter(TraceBuilder& builder, std::string source) : builder_(builder), source_(std::move(source)) {}

  Status feed(std::string_view piece) {
    size_t needed = unit_start_ == kNone ? pos_ : unit_start_;
    if (needed > 0) {
      buffer_.erase(0, needed);
      pos_ -= needed;
      for (size_t* offset : {&unit_start_, &key_start_, &key_end_, &value_start_}) {
        if (*offset != kNone) *offset = *offset >= needed ? *offset - needed : 0;
      }
    }
    // The spare capacity after the text is simdjson's padding.
    buffer_.reserve(buffer_.size() + piece.size() + simdjson::SIMDJSON_PADDING);
    buffer_.append(piece);
    SPROF_TRY_STATUS(scan());
    if (unit_start_ != kNone && buffer_.size() - unit_start_ > kMaxUnitBytes) {
      return make_error(ErrorKind::bad_input, "{}: one JSON value over {} MiB: not a kineto trace", source_, kMaxUnitBytes >> 20);
    }
    return {};
  }

  Status finish() const {
    if (state_ == State::start && !seen_root_) return make_error(ErrorKind::bad_input, "{}: empty, not a Chrome trace", source_);
    if (state_ != State::done) return make_error(ErrorKind::bad_input, "{}: not valid JSON (it ends early)", source_);
    if (object_form_ && !saw_events_) {
      return make_error(ErrorKind::bad_input, "{}: a JSON object without a traceEvents array: not a Chrome trace", source_);
    }
    return {};
  }

  bool object_form() const { return object_form_; }

 private:
  static constexpr size_t kNone = size_t(-1);
  // Before the root; expecting a key (or the end) of the root object; after a key, before its
  // ':'; in a member's value; between elements of the event array; in an element; after the root.
  enum class State { start, key, colon, value, events, element, done };

  static bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // Moves past a string whose opening quote is at `quote`; false when the text ends first
  // (pos_ is then back at the quote, to scan it again with more text).
  bool skip_string(size_t quote) {
    const char* data = buffer_.data();
    size_t i = quote + 1;
    for (;;) {
      const void* q = std::memchr(data + i, '"', buffer_.size() - i);
      if (q == nullptr) {
        pos_ = quote;
        return false;
      }
      size_t at = size_t(static_cast<const char*>(q) - data);
      size_t backslashes = 0;
      while (at - backslashes > quote + 1 && data[at - backslashes - 1] == '\\') ++backslashes;
      if (backslashes % 2 == 0) {
        pos_ = at + 1;
        return true;
      }
      i = at + 1;
    }
  }

  // Scans a value that started at value_start_ until it ends: a string or a nested value at its
  // close, a scalar before the ',' or closing bracket after it. false when the text ends first.
  Result<bool> skip_value() {
    const char* data = buffer_.data();
    if (!value_open_) {
      char c = data[pos_];
      if (c == '"') return skip_string(pos_);  // rescanned from its quote until it is whole
      value_open_ = true;
      scalar_chars_ = 0;
      if (c == '{' || c == '[') {
        depth_ = 1;
        ++pos_;
      } else {
        depth_ = 0;
      }
    }
    if (depth_ == 0) {  // a scalar
      while (pos_ < buffer_.size()) {
        char c = data[pos_];
        if (c == ',' || c == '}' || c == ']' || space(c)) {
          if (scalar_chars_ == 0) return builder_.invalid().error();  // no value at all ("[}"): never loop on it
          return true;
        }
        ++pos_;
        ++scalar_chars_;
      }
      return false;
    }
    while (pos_ < buffer_.size()) {
      char c = data[pos_];
      if (c == '"') {
        if (!skip_string(pos_)) return false;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') {
        if (size_t(++depth_) > kMaxJsonDepth) {
          return make_error(ErrorKind::bad_input, "{}: JSON nested deeper than {} levels: not a Chrome trace", source_, kMaxJsonDepth);
        }
      } else if ((c == '}' || c == ']') && --depth_ == 0) {
        return true;
      }
    }
    return false;
  }

  Status scan() {
    while (pos_ < buffer_.size()) {
      const char c = buffer_[pos_];
      switch (state_) {
        case State::start:
          if (space(c)) {
            ++pos_;
            break;
          }
          if (c != '{' && c != '[') return make_error(ErrorKind::bad_input, "{}: not a Chrome trace (neither an object nor an array)", source_);
          seen_root_ = true;
          object_form_ = c == '{';
          ++pos_;
          state_ = object_form_ ? State::key : State::events;
          break;
        case State::key:
          if (space(c) || c == ',') {
            ++pos_;
          } else if (c == '}') {
            ++pos_;
            state_ = State::done;
          } else if (c == '"') {
            key_start_ = unit_start_ = pos_;
            if (!skip_string(pos_)) return {};
            key_end_ = pos_;
            state_ = State::colon;
          } else {
            return builder_.invalid();
          }
          break;
        case State::colon:
          if (space(c)) {
            ++pos_;
            break;
          }
          if (c != ':') return builder_.invalid();
          ++pos_;
          value_start_ = kNone;
          state_ = State::value;
          break;
        case State::value: {
          if (value_start_ == kNone) {
            if (space(c)) {
              ++pos_;
              break;
            }
            std::string_view key(buffer_.data() + key_start_ + 1, key_end_ - key_start_ - 2);
            if (key == "traceEvents") {
              if (c != '[') {
                return make_error(ErrorKind::bad_input, "{}: a JSON object without a traceEvents array: not a Chrome trace", source_);
              }
              ++pos_;
              saw_events_ = true;
              unit_start_ = kNone;
              state_ = State::events;
              break;
            }
            capture_ = key == "baseTimeNanoseconds" || key == "deviceProperties" || key == "distributedInfo";
            if (!capture_) unit_start_ = kNone;  // skipped: nothing of it needs keeping
            value_start_ = pos_;
            value_open_ = false;
          }
          SPROF_TRY(bool complete, skip_value());
          if (!complete) return {};
          if (capture_) {
            const char* data = buffer_.data();
            SPROF_TRY_STATUS(builder_.top_level(std::string_view(data + key_start_ + 1, key_end_ - key_start_ - 2),
                                                std::string_view(data + value_start_, pos_ - value_start_)));
          }
          unit_start_ = value_start_ = kNone;
          state_ = State::key;
          break;
        }
        case State::events:
          if (space(c) || c == ',') {
            ++pos_;
          } else if (c == ']') {
            ++pos_;
            state_ = object_form_ ? State::key : State::done;
          } else {
            unit_start_ = value_start_ = pos_;
            value_open_ = false;
            state_ = State::element;
          }
          break;
        case State::element: {
          SPROF_TRY(bool complete, skip_value());
          if (!complete) return {};
          if (buffer_[value_start_] == '{') {
            size_t size = pos_ - value_start_;
            if (buffer_.capacity() - buffer_.size() < simdjson::SIMDJSON_PADDING) buffer_.reserve(buffer_.size() + simdjson::SIMDJSON_PADDING);
            SPROF_TRY_STATUS(builder_.event(buffer_.data() + value_start_, size, buffer_.capacity() - value_start_));
          }
          unit_start_ = value_start_ = kNone;
          state_ = State::events;
          break;
        }
        case State::done:
          if (!space(c)) return builder_.invalid();
          ++pos_;
          break;
      }
    }
    return {};
  }

  TraceBuilder& builder_;
  std::string source_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t unit_start_ = kNone;  // the first byte the unit in progress needs kept
  size_t key_start_ = kNone, key_end_ = kNone, value_start_ = kNone;
  int depth_ = 0;
  State state_ = State::start;
  bool seen_root_ = false, object_form_ = false, saw_events_ = false, capture_ = false;
  bool value_open_ = false;  // the value's kind is known (depth_ or scalar): it is being scanned
  size_t scalar_chars_ = 0;  // of the scalar being scanned (its start may be gone from the buffer)
};

// Inflates on a thread of its own while the caller's sink parses: on two cores the reading of a
// .json.gz takes about as long as the slower of the two, not their sum. Pieces pass through a
// short queue (memory: a few MiB); the first error of either side stops both.
Status gunzip_in_parallel(std::string_view compressed, const std::string& source, const TextSink& sink) {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> queue;
  bool done = false, stop = false;
  Status inflated;
  std::thread inflater([&] {
    Status status = gunzip_stream(compressed, source, kMaxTextBytes, [&](std::string_view piece) -> Status {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return queue.size() < 4 || stop; });
      if (stop) return make_error(ErrorKind::bad_input, "stopped");  // the parser's error is the one reported
      queue.emplace_back(piece);
      changed.notify_all();
      return {};
    });
    std::lock_guard lock(mutex);
    inflated = std::move(status);
    done = true;
    changed.notify_all();
  });
  Status parsed;
  for (;;) {
    std::string piece;
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return !queue.empty() || done; });
      if (queue.empty()) break;
      piece = std::move(queue.front());
      queue.pop_front();
      changed.notify_all();
    }
    parsed = sink(piece);
    if (!parsed.ok()) {
      std::lock_guard lock(mutex);
      stop = true;
      changed.notify_all();
      break;
    }
  }
  inflater.join();
  if (!parsed.ok()) return parsed;
  return inflated;
}

Result<GpuTrace> finish(TraceBuilder& builder, const TraceSplitter& splitter) {
  SPROF_TRY_STATUS(splitter.finish());
  return builder.finish(splitter.object_form());
}

}  // namespace

Result<GpuTrace> parse_chrome_gpu_trace(std::string_view text, const std::string& source, size_t piece_bytes) {
  TraceBuilder builder(source);
  TraceSplitter splitter(builder, source);
  piece_bytes = std::max<size_t>(piece_bytes, 1);
  for (size_t at = 0; at < text.size(); at += piece_bytes) SPROF_TRY_STATUS(splitter.feed(text.substr(at, piece_bytes)));
  return finish(builder, splitter);
}

Result<GpuTrace> read_chrome_gpu_trace(const fs::path& path, const ProfileFiles& files) {
  const std::string source = path.string();
  TraceBuilder builder(source);
  TraceSplitter splitter(builder, source);
  size_t text_bytes = 0;
  auto sink = [&](std::string_view piece) -> Status {
    text_bytes += piece.size();
    if (text_bytes > kMaxTextBytes) {
      return make_error(ErrorKind::bad_input, "{}: over {} GiB of trace text: record a window of steps instead", source,
                        kMaxTextBytes >> 30);
    }
    return splitter.feed(piece);
  };
  // A FIFO or a device would block or never end: only regular files are read.
  if (FileKind kind = files.kind(path); kind != FileKind::file) {
    return make_error(ErrorKind::bad_input, "{}: {}", source, kind == FileKind::missing ? "no such file" : "not a regular file");
  }
  if (&files == &local_files()) {
    // Stream from the file: memory stays at a piece plus the records.
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) return make_error(ErrorKind::bad_input, "{}: cannot open ({})", source, std::strerror(errno));
    std::string piece(kPieceBytes, '\0');
    size_t n = std::fread(piece.data(), 1, piece.size(), file.get());
    if (n >= 2 && is_gzip(std::string_view(piece.data(), n))) {
      std::string compressed(piece.data(), n);
      while ((n = std::fread(piece.data(), 1, piece.size(), file.get())) > 0) {
        compressed.append(piece.data(), n);
        if (compressed.size() > kMaxCompressedBytes) {
          return make_error(ErrorKind::bad_input, "{}: over {} GiB compressed: not read", source, kMaxCompressedBytes >> 30);
        }
      }
      if (std::ferror(file.get())) return make_error(ErrorKind::io, "{}: read failed", source);
      SPROF_TRY_STATUS(gunzip_in_parallel(compressed, source, sink));
    } else {
      while (n > 0) {
        SPROF_TRY_STATUS(sink(std::string_view(piece.data(), n)));
        n = std::fread(piece.data(), 1, piece.size(), file.get());
      }
      if (std::ferror(file.get())) return make_error(ErrorKind::io, "{}: read failed", source);
    }
    return finish(builder, splitter);
  }
  std::string data;
  SPROF_TRY_STATUS(files.read(path, data, kMaxCompressedBytes));
  if (is_gzip(data)) {
    SPROF_TRY_STATUS(gunzip_in_parallel(data, source, sink));
  } else {
    for (size_t at = 0; at < data.size(); at += kPieceBytes) SPROF_TRY_STATUS(sink(std::string_view(data).substr(at, kPieceBytes)));
  }
  return finish(builder, splitter);
}

}  // namespace sprof::store
