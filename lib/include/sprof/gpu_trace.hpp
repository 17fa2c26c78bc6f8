#pragma once
// GPU activity as the analyses see it, whichever file it came from: sprof's own per-process
// files (gpu/<pid>.gpu, written by libsprof_cupti.so; docs/gpu-activity.md) or a Chrome trace in
// kineto's conventions (torch.profiler's traces, and sprof's own `export -f chrome`).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

struct GpuDevice {
  int32_t id = 0;  // the process's CUDA ordinal
  std::string name;
  std::string uuid;  // hex, "" when unknown; maps ordinals of different processes to one GPU
  int64_t sm_count = 0;
  int64_t global_memory_bytes = 0;
  int32_t compute_major = 0;
  int32_t compute_minor = 0;
};

enum class GpuOpKind { kernel, memcpy, memset };

// Names repeat across millions of records (a kernel's name can be kilobytes): a trace keeps each
// distinct one once, and its records hold views of it. Node-based, so views stay valid as it
// grows; a trace's copies share it.
class NameTable {
 public:
  std::string_view intern(std::string_view name);
  size_t size() const { return names_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> names_;
};

// Work that ran on a device's stream: a kernel, a copy or a memset.
struct GpuOp {
  GpuOpKind kind = GpuOpKind::kernel;
  std::string_view name;     // demangled kernel name; "Memcpy HtoD (Pageable -> Device)"; "Memset (Device)"
  int32_t pid = 0;           // the OS process that launched it
  int32_t device = 0;
  int64_t context = 0;
  int64_t stream = 0;
  int64_t correlation = 0;   // the launching API call's; 0 when unknown
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // kernels
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers_per_thread = 0;
  int64_t shared_memory = 0;  // static + dynamic bytes
  // copies and memsets
  int64_t bytes = 0;
  std::string_view copy_kind;  // HtoD DtoH DtoD HtoH PtoP ...; "" for memsets
  std::string_view src_memory;  // Pageable Pinned Device Managed ...
  std::string_view dst_memory;

  int64_t duration_ns() const { return end_ns - start_ns; }
};

// A CUDA runtime or driver API call on a host thread.
struct GpuApiCall {
  std::string_view name;  // without the _vNNNN suffix: "cudaLaunchKernel", "cuLaunchKernel"
  bool driver = false;
  int32_t pid = 0;
  int32_t tid = 0;  // system thread id (the sampler's)
  int64_t correlation = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// A host wait on the GPU: "Stream Sync", "Event Sync", "Context Sync", "Stream Wait Event".
struct GpuSync {
  std::string_view kind;
  int32_t pid = 0;
  int32_t tid = 0;       // from the API call with the same correlation id when known
  int32_t device = -1;   // -1 when unknown (sprof's files: from the context's other work)
  int64_t context = 0;
  int64_t stream = -1;   // -1: not on a stream (Context Sync, Event Sync)
  int64_t correlation = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// CUPTI's own cost (overhead records).
struct GpuOverhead {
  std::string_view name;
  int32_t pid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct GpuProcess {
  int32_t pid = 0;
  int32_t rank = -1;  // RANK, LOCAL_RANK, WORLD_SIZE from the process's environment; -1 unset
  int32_t local_rank = -1;
  int32_t world_size = -1;
  uint32_t cupti_version = 0;
  std::string cupti;
  int64_t dropped_records = 0;    // CUPTI dropped them (buffers full)
  int64_t untimed_records = 0;    // start = end = 0: CUPTI could not time them
};

// A training step a Chrome trace marks (torch.profiler's "ProfilerStep#N").
struct GpuTraceStep {
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Its records' names are views into `names`: keep the trace (or a copy) while using them.
struct GpuTrace {
  std::shared_ptr<NameTable> names = std::make_shared<NameTable>();
  std::string_view intern(std::string_view name) { return names->intern(name); }

  std::vector<GpuProcess> processes;
  std::vector<GpuTraceStep> steps;   // from the trace itself; sprof's profiles have their step timeline
  std::vector<GpuDevice> devices;
  std::vector<GpuOp> ops;            // sorted by start
  std::vector<GpuApiCall> api_calls; // sorted by start
  std::vector<GpuSync> syncs;        // sorted by start
  std::vector<GpuOverhead> overheads;
  // Clock of the times: "monotonic" (sprof's files: CLOCK_MONOTONIC ns, the sampler's clock) or
  // "epoch" (Chrome traces: ns since the Unix epoch).
  std::string clock = "monotonic";
  std::vector<std::string> warnings;  // skipped chunks, unreadable files: said once each

  bool empty() const { return ops.empty() && api_calls.empty() && syncs.empty(); }
};

// sprof's own files: every gpu/<pid>.gpu of a profile directory, merged. A directory without
// any gives an empty trace.
Result<GpuTrace> read_gpu_activity(const std::filesystem::path& profile_dir, const ProfileFiles& files = local_files());
// One gpu/<pid>.gpu file appended into `trace` (not sorted).
Status read_gpu_activity_file(const std::filesystem::path& path, GpuTrace& trace, const ProfileFiles& files = local_files());
// The same over bytes in memory (`source` names them in messages).
Status parse_gpu_activity(std::string_view bytes, const std::string& source, GpuTrace& trace);

// A Chrome trace (JSON, or gzip-compressed JSON) in kineto's conventions: categories kernel,
// gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver, cuda_sync, overhead; deviceProperties and
// distributedInfo at the top. Other events are ignored. Read as a stream (memory: the records,
// not the text); times exactly as written (µs with up to three decimals are whole ns).
Result<GpuTrace> read_chrome_gpu_trace(const std::filesystem::path& path, const ProfileFiles& files = local_files());
// `piece_bytes`: the text is handed to the streaming parser in pieces of this size (tests vary it
// to check that where a piece ends never matters).
Result<GpuTrace> parse_chrome_gpu_trace(std::string_view json_text, const std::string& source,
                                        size_t piece_bytes = size_t(4) << 20);

// Sorts ops, calls and syncs by start time (then device, stream) after reading.
void sort_gpu_trace(GpuTrace& trace);

// Names as kineto writes them.
std::string memcpy_name(std::string_view copy_kind, std::string_view src_memory, std::string_view dst_memory);
std::string memset_name(std::string_view memory);

}  // namespace sprof::store
