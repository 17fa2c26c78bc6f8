// Reads the GPU side of a Chrome trace in kineto's conventions (torch.profiler's output, and
// sprof's own `export -f chrome`): GPU work is an "X" event of category kernel, gpu_memcpy or
// gpu_memset whose args name the device and stream; CUDA calls are cuda_runtime / cuda_driver
// events on OS pid/tid; the correlation arg ties the two. Timestamps are µs, relative to
// baseTimeNanoseconds when the trace has it.

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sprof/gpu_trace.hpp"
#include "sprof/gzip.hpp"
#include "sprof/profile_files.hpp"
#include "store/json_text.hpp"

namespace sprof::store {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Larger traces than this are refused rather than parsed into memory (kineto traces of a few
// steps are tens of MB; a GB-sized one needs a window, not a bigger machine).
constexpr size_t kMaxTraceBytes = size_t(4) << 30;

int64_t integer_of(const json& v, int64_t fallback = 0) {
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

int64_t arg_int(const json& args, const char* key, int64_t fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : integer_of(*it, fallback);
}

std::string arg_string(const json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// µs (an integer or a float with fractions of a µs) to ns, exactly for integers.
bool micros_to_ns(const json& v, int64_t& ns) {
  constexpr double kLimit = 9.0e15;  // µs; ns then stay below 2^63
  if (v.is_number_integer()) {
    int64_t us = v.get<int64_t>();
    if (us > int64_t(kLimit) || us < -int64_t(kLimit)) return false;
    ns = us * 1000;
    return true;
  }
  if (v.is_number_float()) {
    double us = v.get<double>();
    if (!std::isfinite(us) || std::fabs(us) > kLimit) return false;
    ns = int64_t(std::llround(us * 1000.0));
    return true;
  }
  return false;
}

// "Memcpy HtoD (Pageable -> Device)" -> HtoD, Pageable, Device.
void split_memcpy_name(const std::string& name, GpuOp& op) {
  static const std::string_view prefix = "Memcpy ";
  if (name.rfind(prefix, 0) != 0) return;
  size_t space = name.find(' ', prefix.size());
  op.copy_kind = name.substr(prefix.size(), space == std::string::npos ? std::string::npos : space - prefix.size());
  size_t open = name.find('('), arrow = name.find(" -> "), close = name.rfind(')');
  if (open != std::string::npos && arrow != std::string::npos && close != std::string::npos && open < arrow && arrow < close) {
    op.src_memory = name.substr(open + 1, arrow - open - 1);
    op.dst_memory = name.substr(arrow + 4, close - arrow - 4);
  }
}

std::optional<int64_t> profiler_step(const std::string& name) {
  static const std::string_view prefix = "ProfilerStep#";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return std::nullopt;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

}  // namespace

Result<GpuTrace> parse_chrome_gpu_trace(std::string_view text, const std::string& source) {
  if (!json_depth_within(text)) {
    return make_error(ErrorKind::bad_input, "{}: JSON nested deeper than {} levels: not a Chrome trace", source, kMaxJsonDepth);
  }
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return make_error(ErrorKind::bad_input, "{}: not valid JSON", source);
  const json* events = nullptr;
  if (doc.is_object()) {
    auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array()) {
      return make_error(ErrorKind::bad_input, "{}: a JSON object without a traceEvents array: not a Chrome trace", source);
    }
    events = &*it;
  } else if (doc.is_array()) {
    events = &doc;  // the bare array form of the Trace Event Format
  } else {
    return make_error(ErrorKind::bad_input, "{}: not a Chrome trace (neither an object nor an array)", source);
  }

  GpuTrace trace;
  trace.clock = "epoch";
  int64_t base_ns = 0;
  if (doc.is_object()) {
    base_ns = arg_int(doc, "baseTimeNanoseconds", 0);
    if (auto it = doc.find("deviceProperties"); it != doc.end() && it->is_array()) {
      for (const json& d : *it) {
        if (!d.is_object()) continue;
        GpuDevice device;
        device.id = int32_t(std::clamp<int64_t>(arg_int(d, "id", 0), 0, INT32_MAX));
        device.name = arg_string(d, "name");
        device.uuid = arg_string(d, "uuid");
        device.sm_count = arg_int(d, "numSms", 0);
        device.global_memory_bytes = arg_int(d, "totalGlobalMem", 0);
        device.compute_major = int32_t(std::clamp<int64_t>(arg_int(d, "computeMajor", 0), 0, 1000));
        device.compute_minor = int32_t(std::clamp<int64_t>(arg_int(d, "computeMinor", 0), 0, 1000));
        trace.devices.push_back(std::move(device));
      }
    }
    GpuProcess process;
    if (auto it = doc.find("distributedInfo"); it != doc.end() && it->is_object()) {
      process.rank = int32_t(std::clamp<int64_t>(arg_int(*it, "rank", -1), -1, INT32_MAX));
      process.world_size = int32_t(std::clamp<int64_t>(arg_int(*it, "world_size", -1), -1, INT32_MAX));
    }
    trace.processes.push_back(process);  // pid filled from the first CPU event below
  }

  static const json kNoArgs = json::object();
  size_t bad = 0;
  std::map<int32_t, bool> pids;
  for (const json& e : *events) {
    if (!e.is_object()) continue;
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get_ref<const std::string&>() != "X") continue;
    std::string cat = arg_string(e, "cat");
    std::string name = arg_string(e, "name");
    bool step_event = (cat == "cpu_op" || cat == "user_annotation") && profiler_step(name).has_value();
    bool wanted = step_event || cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" ||
                  cat == "cuda_runtime" || cat == "cuda_driver" || cat == "cuda_sync" || cat == "overhead" ||
                  cat == "Overhead";
    if (!wanted) continue;
    int64_t ts = 0, dur = 0;
    auto ts_it = e.find("ts");
    auto dur_it = e.find("dur");
    if (ts_it == e.end() || !micros_to_ns(*ts_it, ts) || (dur_it != e.end() && !micros_to_ns(*dur_it, dur))) {
      ++bad;
      continue;
    }
    if (dur < 0) dur = 0;  // a negative duration is a broken event; keep it as an instant
    int64_t start = ts + base_ns;
    int64_t end = start + dur;
    auto args_it = e.find("args");
    const json& args = args_it != e.end() && args_it->is_object() ? *args_it : kNoArgs;
    int64_t pid = e.contains("pid") ? integer_of(e["pid"], 0) : 0;
    int64_t tid = e.contains("tid") ? integer_of(e["tid"], 0) : 0;
    int32_t pid32 = int32_t(std::clamp<int64_t>(pid, INT32_MIN, INT32_MAX));
    int32_t tid32 = int32_t(std::clamp<int64_t>(tid, INT32_MIN, INT32_MAX));

    if (step_event) {
      trace.steps.push_back({*profiler_step(name), start, end});
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      GpuOp op;
      op.kind = cat == "kernel" ? GpuOpKind::kernel : cat == "gpu_memcpy" ? GpuOpKind::memcpy : GpuOpKind::memset;
      op.name = name;
      op.device = int32_t(std::clamp<int64_t>(arg_int(args, "device", pid), INT32_MIN, INT32_MAX));
      op.context = arg_int(args, "context", 0);
      op.stream = arg_int(args, "stream", tid);
      op.correlation = arg_int(args, "correlation", 0);
      op.start_ns = start;
      op.end_ns = end;
      if (op.kind == GpuOpKind::kernel) {
        for (const char* key : {"grid", "block"}) {
          auto it = args.find(key);
          if (it == args.end() || !it->is_array()) continue;
          int32_t* out = std::string_view(key) == "grid" ? op.grid : op.block;
          for (size_t i = 0; i < 3 && i < it->size(); ++i) {
            out[i] = int32_t(std::clamp<int64_t>(integer_of((*it)[i], 0), 0, INT32_MAX));
          }
        }
        op.registers_per_thread = int32_t(std::clamp<int64_t>(arg_int(args, "registers per thread", 0), 0, INT32_MAX));
        op.shared_memory = arg_int(args, "shared memory", 0);
      } else {
        op.bytes = std::max<int64_t>(0, arg_int(args, "bytes", 0));
        if (op.kind == GpuOpKind::memcpy) {
          split_memcpy_name(name, op);
        } else {
          size_t open = name.find('('), close = name.rfind(')');
          if (open != std::string::npos && close != std::string::npos && open < close) {
            op.dst_memory = name.substr(open + 1, close - open - 1);
          }
        }
      }
      trace.ops.push_back(std::move(op));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      GpuApiCall call;
      call.name = name;
      call.driver = cat == "cuda_driver";
      call.pid = pid32;
      call.tid = tid32;
      call.correlation = arg_int(args, "correlation", 0);
      call.start_ns = start;
      call.end_ns = end;
      pids[pid32] = true;
      trace.api_calls.push_back(std::move(call));
    } else if (cat == "cuda_sync") {
      GpuSync sync;
      sync.kind = arg_string(args, "cuda_sync_kind");
      if (sync.kind.empty()) sync.kind = name;
      sync.stream = arg_int(args, "stream", -1);
      sync.correlation = arg_int(args, "correlation", 0);
      sync.start_ns = start;
      sync.end_ns = end;
      trace.syncs.push_back(std::move(sync));
    } else {
      trace.overheads.push_back({name, pid32, start, end});
    }
  }
  if (bad > 0) trace.warnings.push_back(fmt::format("{}: {} event(s) without a usable ts/dur skipped", source, bad));

  // Kineto puts the launching thread on the runtime call only: give ops and syncs the pid and
  // tid of the call with their correlation id.
  std::map<int64_t, const GpuApiCall*> by_correlation;
  for (const GpuApiCall& call : trace.api_calls) {
    if (call.correlation != 0) by_correlation.emplace(call.correlation, &call);
  }
  for (GpuOp& op : trace.ops) {
    if (auto it = by_correlation.find(op.correlation); it != by_correlation.end()) op.pid = it->second->pid;
  }
  for (GpuSync& sync : trace.syncs) {
    if (auto it = by_correlation.find(sync.correlation); it != by_correlation.end()) {
      sync.pid = it->second->pid;
      sync.tid = it->second->tid;
    }
  }
  if (!trace.processes.empty() && !pids.empty()) trace.processes.front().pid = pids.begin()->first;
  std::sort(trace.steps.begin(), trace.steps.end(),
            [](const GpuTraceStep& a, const GpuTraceStep& b) { return a.start_ns < b.start_ns; });
  sort_gpu_trace(trace);
  return trace;
}

Result<GpuTrace> read_chrome_gpu_trace(const fs::path& path) {
  std::string data;
  if (auto status = files_for(path).read(path, data, kMaxTraceBytes); !status.ok()) return status.error();
  if (is_gzip(data)) {
    SPROF_TRY(std::string text, gunzip(data, path.string(), kMaxTraceBytes));
    return parse_chrome_gpu_trace(text, path.string());
  }
  return parse_chrome_gpu_trace(data, path.string());
}

}  // namespace sprof::store
