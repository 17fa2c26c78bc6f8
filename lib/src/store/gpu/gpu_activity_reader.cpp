// Reader of sprof's GPU activity files (gpu/<pid>.gpu, docs/gpu-activity.md). A chunk that fails
// its checksum or does not decode loses only itself: the reader resumes at the next chunk magic
// and says how many chunks it dropped.

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "sprof/gpu_trace.hpp"
#include "sprof/layout.hpp"
#include "sprof/profile_files.hpp"
#include "store/codecs/crc32.hpp"
#include "store/gpu/gpu_activity_format.hpp"

namespace sprof::store {
namespace fs = std::filesystem;
using namespace gpufile;

namespace {

// Monotonic ns stay far below 2^62 (146 years); bounding them keeps sums free of overflow.
constexpr int64_t kMaxTimeNs = int64_t(1) << 62;

std::string_view copy_kind_text(uint64_t kind) {
  switch (kind) {
    case kHtoD: return "HtoD";
    case kDtoH: return "DtoH";
    case kHtoA: return "HtoA";
    case kAtoH: return "AtoH";
    case kAtoA: return "AtoA";
    case kAtoD: return "AtoD";
    case kDtoA: return "DtoA";
    case kDtoD: return "DtoD";
    case kHtoH: return "HtoH";
    case kPtoP: return "PtoP";
    default: return "Unknown";
  }
}

std::string_view memory_kind_text(uint64_t kind) {
  switch (kind) {
    case kMemoryPageable: return "Pageable";
    case kMemoryPinned: return "Pinned";
    case kMemoryDevice: return "Device";
    case kMemoryArray: return "Array";
    case kMemoryManaged: return "Managed";
    case kMemoryDeviceStatic: return "Device Static";
    case kMemoryManagedStatic: return "Managed Static";
    default: return "Unknown";
  }
}

std::string_view sync_kind_text(uint64_t type) {
  switch (type) {
    case kEventSync: return "Event Sync";
    case kStreamWaitEvent: return "Stream Wait Event";
    case kStreamSync: return "Stream Sync";
    case kContextSync: return "Context Sync";
    default: return "Sync";
  }
}

int32_t small(uint64_t v) { return v > uint64_t(INT32_MAX) ? INT32_MAX : int32_t(v); }
int64_t big(uint64_t v) { return v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v); }

// What one file adds, decoded chunk by chunk; appended to the trace only once a chunk decoded
// completely, so a bad chunk adds nothing.
struct FileState {
  GpuProcess process;
  bool have_process = false;
  std::map<int32_t, GpuDevice> devices;
};

class ChunkDecoder {
 public:
  ChunkDecoder(FileState& file, GpuTrace& out) : file_(file), out_(out) {}

  bool decode(const char* begin, const char* end) {
    bytes::Cursor c(begin, end);
    GpuTrace add;
    add.names = out_.names;  // the records' names outlive this chunk
    std::vector<std::string> strings;
    GpuProcess process = file_.process;
    bool have_process = false;
    std::map<int32_t, GpuDevice> devices;
    int64_t last_start = 0;
    auto str = [&](std::string& text) {
      uint64_t i = 0;
      if (!c.varint(i) || i >= strings.size()) return false;
      text = strings[i];
      return true;
    };
    auto name = [&](std::string_view& text) {
      uint64_t i = 0;
      if (!c.varint(i) || i >= strings.size()) return false;
      text = add.intern(strings[i]);
      return true;
    };
    auto time = [&](int64_t& start, int64_t& end_ns) {
      int64_t delta = 0;
      uint64_t duration = 0;
      if (!c.svarint(delta) || !c.varint(duration)) return false;
      if (delta > kMaxTimeNs || delta < -kMaxTimeNs || duration > uint64_t(kMaxTimeNs)) return false;
      start = last_start + delta;
      if (start < -kMaxTimeNs || start > kMaxTimeNs) return false;
      last_start = start;
      end_ns = start + int64_t(duration);
      return true;
    };
    auto op_common = [&](GpuOp& op) {
      uint64_t device = 0, context = 0, stream = 0, correlation = 0;
      if (!time(op.start_ns, op.end_ns) || !c.varint(device) || !c.varint(context) || !c.varint(stream) ||
          !c.varint(correlation)) {
        return false;
      }
      op.device = small(device);
      op.context = big(context);
      op.stream = big(stream);
      op.correlation = big(correlation);
      return true;
    };
    while (!c.done()) {
      uint8_t tag = 0;
      if (!c.byte(tag)) return false;
      if (tag != kString && tag != kProcess && !have_process) return false;  // the process comes first
      switch (tag) {
        case kString: {
          uint64_t n = 0;
          std::string_view text;
          if (!c.varint(n) || n > c.left() || !c.bytes(size_t(n), text)) return false;
          strings.emplace_back(text);
          break;
        }
        case kProcess: {
          uint64_t pid = 0, version = 0;
          int64_t rank = 0, local_rank = 0, world = 0, mono = 0, real = 0;
          std::string cupti;
          if (!c.varint(pid) || !c.svarint(rank) || !c.svarint(local_rank) || !c.svarint(world) || !c.svarint(mono) ||
              !c.svarint(real) || !c.varint(version) || !str(cupti)) {
            return false;
          }
          if (pid == 0 || pid > uint64_t(INT32_MAX)) return false;
          process.pid = int32_t(pid);
          process.rank = int32_t(std::clamp<int64_t>(rank, -1, INT32_MAX));
          process.local_rank = int32_t(std::clamp<int64_t>(local_rank, -1, INT32_MAX));
          process.world_size = int32_t(std::clamp<int64_t>(world, -1, INT32_MAX));
          process.cupti_version = version > UINT32_MAX ? 0 : uint32_t(version);
          process.cupti = cupti;
          have_process = true;
          break;
        }
        case kDevice: {
          GpuDevice d;
          uint64_t id = 0, sms = 0, memory = 0, major = 0, minor = 0;
          if (!c.varint(id) || !str(d.name) || !str(d.uuid) || !c.varint(sms) || !c.varint(memory) ||
              !c.varint(major) || !c.varint(minor)) {
            return false;
          }
          d.id = small(id);
          d.sm_count = big(sms);
          d.global_memory_bytes = big(memory);
          d.compute_major = small(major);
          d.compute_minor = small(minor);
          devices[d.id] = d;
          break;
        }
        case kContext: {
          uint64_t context = 0, device = 0;
          if (!c.varint(context) || !c.varint(device)) return false;
          break;  // contexts map to devices already named in every op record
        }
        case kKernel: {
          GpuOp op;
          op.kind = GpuOpKind::kernel;
          uint64_t v[7] = {};  // grid x y z, block x y z, registers per thread
          if (!op_common(op)) return false;
          for (uint64_t& x : v) {
            if (!c.varint(x)) return false;
          }
          uint64_t static_shared = 0, dynamic_shared = 0;
          if (!c.varint(static_shared) || !c.varint(dynamic_shared) || !name(op.name)) return false;
          for (int i = 0; i < 3; ++i) {
            op.grid[i] = small(v[i]);
            op.block[i] = small(v[3 + i]);
          }
          op.registers_per_thread = small(v[6]);
          op.shared_memory = std::min<int64_t>(big(static_shared), INT32_MAX) + std::min<int64_t>(big(dynamic_shared), INT32_MAX);
          op.pid = process.pid;
          add.ops.push_back(std::move(op));
          break;
        }
        case kMemcpy: {
          GpuOp op;
          op.kind = GpuOpKind::memcpy;
          uint64_t copy = 0, src = 0, dst = 0, n = 0, flags = 0;
          if (!op_common(op) || !c.varint(copy) || !c.varint(src) || !c.varint(dst) || !c.varint(n) ||
              !c.varint(flags)) {
            return false;
          }
          op.copy_kind = copy_kind_text(copy);
          op.src_memory = memory_kind_text(src);
          op.dst_memory = memory_kind_text(dst);
          op.bytes = big(n);
          op.name = add.intern(memcpy_name(op.copy_kind, op.src_memory, op.dst_memory));
          op.pid = process.pid;
          add.ops.push_back(std::move(op));
          break;
        }
        case kMemset: {
          GpuOp op;
          op.kind = GpuOpKind::memset;
          uint64_t memory = 0, n = 0;
          if (!op_common(op) || !c.varint(memory) || !c.varint(n)) return false;
          op.dst_memory = memory_kind_text(memory);
          op.bytes = big(n);
          op.name = add.intern(memset_name(op.dst_memory));
          op.pid = process.pid;
          add.ops.push_back(std::move(op));
          break;
        }
        case kApi: {
          GpuApiCall call;
          uint64_t domain = 0, cbid = 0, tid = 0, correlation = 0, result = 0;
          if (!time(call.start_ns, call.end_ns) || !c.varint(domain) || !c.varint(cbid) || !name(call.name) ||
              !c.varint(tid) || !c.varint(correlation) || !c.varint(result)) {
            return false;
          }
          call.driver = domain == 1;
          call.tid = small(tid);
          call.correlation = big(correlation);
          call.pid = process.pid;
          add.api_calls.push_back(std::move(call));
          break;
        }
        case kSync: {
          GpuSync sync;
          uint64_t type = 0, context = 0, correlation = 0;
          int64_t stream = 0;
          if (!time(sync.start_ns, sync.end_ns) || !c.varint(type) || !c.varint(context) || !c.svarint(stream) ||
              !c.varint(correlation)) {
            return false;
          }
          sync.kind = sync_kind_text(type);
          sync.stream = stream;
          sync.context = int64_t(context);
          sync.correlation = big(correlation);
          sync.pid = process.pid;
          add.syncs.push_back(std::move(sync));
          break;
        }
        case kOverhead: {
          GpuOverhead overhead;
          uint64_t kind = 0;
          if (!time(overhead.start_ns, overhead.end_ns) || !c.varint(kind) || !name(overhead.name)) return false;
          overhead.pid = process.pid;
          add.overheads.push_back(std::move(overhead));
          break;
        }
        case kLosses: {
          uint64_t dropped = 0, untimed = 0, other = 0;
          if (!c.varint(dropped) || !c.varint(untimed) || !c.varint(other)) return false;
          // Cumulative counts: the latest chunk's are the file's.
          process.dropped_records = big(dropped);
          process.untimed_records = big(untimed);
          break;
        }
        default:
          return false;
      }
    }
    if (!have_process) return false;
    file_.process = process;
    file_.have_process = true;
    for (auto& [id, d] : devices) file_.devices[id] = d;
    auto move_into = [](auto& to, auto& from) {
      to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    };
    move_into(out_.ops, add.ops);
    move_into(out_.api_calls, add.api_calls);
    move_into(out_.syncs, add.syncs);
    move_into(out_.overheads, add.overheads);
    return true;
  }

 private:
  FileState& file_;
  GpuTrace& out_;
};

}  // namespace

std::string_view NameTable::intern(std::string_view name) {
  auto it = names_.find(name);
  if (it == names_.end()) it = names_.emplace(name).first;
  return *it;
}

std::string memcpy_name(std::string_view copy_kind, std::string_view src_memory, std::string_view dst_memory) {
  return fmt::format("Memcpy {} ({} -> {})", copy_kind, src_memory, dst_memory);
}

std::string memset_name(std::string_view memory) { return fmt::format("Memset ({})", memory); }

Status read_gpu_activity_file(const fs::path& path, GpuTrace& trace, const ProfileFiles& files) {
  std::string data;
  if (auto status = files.read(path, data); !status.ok()) return status;
  return parse_gpu_activity(data, path.string(), trace);
}

Status parse_gpu_activity(std::string_view data, const std::string& source, GpuTrace& trace) {
  if (data.size() < kFileHeaderSize || std::memcmp(data.data(), kFileMagic, sizeof kFileMagic) != 0) {
    return make_error(ErrorKind::bad_input, "{}: not a sprof GPU activity file (no SPROFGPU header)", source);
  }
  uint32_t version = bytes::get_u32(data.data() + 8);
  uint32_t header_size = bytes::get_u32(data.data() + 12);
  if (version != kFormatVersion || header_size < kFileHeaderSize || header_size > data.size()) {
    return make_error(ErrorKind::bad_input, "{}: GPU activity format {} is not one this sprof reads (it reads {})",
                      source, version, kFormatVersion);
  }
  FileState file;
  ChunkDecoder decoder(file, trace);
  size_t pos = header_size, dropped = 0, dropped_bytes = 0;
  bool torn_tail = false;
  while (pos < data.size()) {
    size_t left = data.size() - pos;
    bool framed = left >= kChunkPrefixSize && std::memcmp(data.data() + pos, kChunkMagic, 4) == 0;
    uint32_t length = framed ? bytes::get_u32(data.data() + pos + 4) : 0;
    size_t body = pos + kChunkPrefixSize;
    if (framed && length <= kMaxChunkBody && length <= left - kChunkPrefixSize &&
        crc32(data.data() + body, length) == bytes::get_u32(data.data() + pos + 8) &&
        decoder.decode(data.data() + body, data.data() + body + length)) {
      pos = body + length;
      continue;
    }
    // Not a sound chunk: resume at the next chunk magic. With none after it, a chunk cut short
    // is the one being written when the process died; anything else is damage.
    size_t found = data.find(std::string_view(kChunkMagic, 4), pos + 1);
    bool cut_short = left < kChunkPrefixSize || (framed && length <= kMaxChunkBody && length > left - kChunkPrefixSize);
    if (found == std::string::npos && cut_short) {
      torn_tail = true;
      break;
    }
    ++dropped;
    size_t resume = found == std::string::npos ? data.size() : found;
    dropped_bytes += resume - pos;
    pos = resume;
  }
  if (dropped > 0) {
    trace.warnings.push_back(fmt::format("{}: {} damaged chunk(s) skipped ({} bytes)", source, dropped, dropped_bytes));
  }
  if (torn_tail) trace.warnings.push_back(fmt::format("{}: the last chunk is incomplete (the process ended while writing it)", source));
  if (file.have_process) {
    trace.processes.push_back(file.process);
    for (const auto& entry : file.devices) {
      const GpuDevice& d = entry.second;
      bool known = std::any_of(trace.devices.begin(), trace.devices.end(),
                               [&](const GpuDevice& e) { return e.id == d.id && e.uuid == d.uuid; });
      if (!known) trace.devices.push_back(d);
    }
  }
  return {};
}

Result<GpuTrace> read_gpu_activity(const fs::path& profile_dir, const ProfileFiles& files) {
  GpuTrace trace;
  trace.clock = "monotonic";
  fs::path dir = profile_dir / kGpuDir;
  if (files.kind(dir) != FileKind::directory) return trace;
  auto entries = files.list(dir);
  if (!entries.ok()) return entries.error();
  for (const FileEntry& entry : *entries) {
    if (entry.kind != FileKind::file || fs::path(entry.name).extension() != ".gpu") continue;
    if (auto status = read_gpu_activity_file(entry.path, trace, files); !status.ok()) {
      trace.warnings.push_back(status.error().message);
    }
  }
  // CUPTI's sync records name a context, not a device, nor a thread: the context's work gives
  // the device, the API call with the same correlation id the thread that waited.
  std::map<std::pair<int32_t, int64_t>, int32_t> device_of_context;
  for (const GpuOp& op : trace.ops) device_of_context.emplace(std::make_pair(op.pid, op.context), op.device);
  std::map<std::pair<int32_t, int64_t>, int32_t> tid_of_call;
  for (const GpuApiCall& call : trace.api_calls) {
    if (call.correlation != 0) tid_of_call.emplace(std::make_pair(call.pid, call.correlation), call.tid);
  }
  for (GpuSync& sync : trace.syncs) {
    if (auto it = device_of_context.find({sync.pid, sync.context}); it != device_of_context.end()) sync.device = it->second;
    if (auto it = tid_of_call.find({sync.pid, sync.correlation}); it != tid_of_call.end()) sync.tid = it->second;
  }
  sort_gpu_trace(trace);
  return trace;
}

void sort_gpu_trace(GpuTrace& trace) {
  std::stable_sort(trace.ops.begin(), trace.ops.end(), [](const GpuOp& a, const GpuOp& b) {
    return std::tie(a.start_ns, a.device, a.stream) < std::tie(b.start_ns, b.device, b.stream);
  });
  std::stable_sort(trace.api_calls.begin(), trace.api_calls.end(),
                   [](const GpuApiCall& a, const GpuApiCall& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(trace.syncs.begin(), trace.syncs.end(),
                   [](const GpuSync& a, const GpuSync& b) { return a.start_ns < b.start_ns; });
  std::sort(trace.devices.begin(), trace.devices.end(),
            [](const GpuDevice& a, const GpuDevice& b) { return a.id < b.id; });
  std::sort(trace.processes.begin(), trace.processes.end(),
            [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
}

}  // namespace sprof::store
