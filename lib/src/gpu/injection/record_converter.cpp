#include "gpu/injection/record_converter.hpp"

#include <cstddef>
#include <cstdlib>

#include "sprof/clock.hpp"
#include "sprof/demangle.hpp"
#include "store/codecs/crc32.hpp"

namespace sprof::gpu::injection {
namespace {

namespace gf = store::gpufile;

// The fields read here sit where they sat in the oldest struct of each record that a CUPTI 12.x
// may still write (the deprecated structs), so one prefix view reads every version.
#define SPROF_SAME_OFFSET(old_type, new_type, field) \
  static_assert(offsetof(old_type, field) == offsetof(new_type, field), #new_type "." #field " moved")
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, registersPerThread);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, start);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, end);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, deviceId);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, contextId);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, streamId);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, gridX);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, blockZ);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, staticSharedMemory);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, dynamicSharedMemory);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, correlationId);
SPROF_SAME_OFFSET(CUpti_ActivityKernel4, CUpti_ActivityKernel10, name);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, copyKind);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, srcKind);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, dstKind);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, flags);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, bytes);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, start);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, end);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, deviceId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, contextId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, streamId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, correlationId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, copyKind);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, bytes);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, start);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, end);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, deviceId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, contextId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, streamId);
SPROF_SAME_OFFSET(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, correlationId);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, bytes);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, start);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, end);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, deviceId);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, contextId);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, streamId);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, correlationId);
SPROF_SAME_OFFSET(CUpti_ActivityMemset, CUpti_ActivityMemset4, memoryKind);
SPROF_SAME_OFFSET(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, type);
SPROF_SAME_OFFSET(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, start);
SPROF_SAME_OFFSET(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, end);
SPROF_SAME_OFFSET(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, correlationId);
SPROF_SAME_OFFSET(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, contextId);
SPROF_SAME_OFFSET(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, streamId);
SPROF_SAME_OFFSET(CUpti_ActivityOverhead, CUpti_ActivityOverhead3, overheadKind);
SPROF_SAME_OFFSET(CUpti_ActivityOverhead, CUpti_ActivityOverhead3, start);
SPROF_SAME_OFFSET(CUpti_ActivityOverhead, CUpti_ActivityOverhead3, end);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, globalMemorySize);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, numMultiprocessors);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, computeCapabilityMajor);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, computeCapabilityMinor);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, id);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, uuid);
SPROF_SAME_OFFSET(CUpti_ActivityDevice4, CUpti_ActivityDevice5, name);
SPROF_SAME_OFFSET(CUpti_ActivityContext, CUpti_ActivityContext3, contextId);
SPROF_SAME_OFFSET(CUpti_ActivityContext, CUpti_ActivityContext3, deviceId);
#undef SPROF_SAME_OFFSET

// A chunk is closed past this many bytes (the format allows 64 MiB): a reader that meets a
// damaged chunk loses less, and the writer's buffer stays small.
constexpr size_t kChunkTarget = size_t(8) << 20;
constexpr size_t kMaxCachedNames = 20000;

uint64_t clamp_u(int64_t v) { return v < 0 ? 0 : uint64_t(v); }

std::string overhead_name(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Runtime Triggered Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM Activity Init";
    default: return "Unknown";
  }
}

std::string uuid_hex(const CUuuid& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char b : uuid.bytes) {
    out += kHex[(uint8_t(b) >> 4) & 0xF];
    out += kHex[uint8_t(b) & 0xF];
  }
  return out;
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": the names HTA and kineto's traces use.
std::string strip_version(std::string name) {
  size_t at = name.rfind("_v");
  if (at != std::string::npos && at + 2 < name.size() &&
      name.find_first_not_of("0123456789", at + 2) == std::string::npos) {
    name.resize(at);
  }
  return name;
}

}  // namespace

int64_t env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v < 0 || v > INT32_MAX) return -1;
  return v;
}

RecordConverter::RecordConverter(const CuptiFunctions& fn, ProcessIdentity identity)
    : fn_(fn), identity_(std::move(identity)) {}

void RecordConverter::note_device_or_context(const CUpti_Activity* record) {
  if (record->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
    const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
    Device device;
    device.name = d->name != nullptr ? d->name : "";
    device.uuid = uuid_hex(d->uuid);
    device.sm_count = d->numMultiprocessors;
    device.memory = d->globalMemorySize;
    device.major = d->computeCapabilityMajor;
    device.minor = d->computeCapabilityMinor;
    devices_[d->id] = std::move(device);
    new_devices_ = true;
  } else if (record->kind == CUPTI_ACTIVITY_KIND_CONTEXT) {
    const auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(record);
    contexts_[c->contextId] = c->deviceId;
    new_devices_ = true;
  }
}

void RecordConverter::begin_chunk() {
  body_.clear();
  records_in_chunk_ = 0;
  // Strings are defined before the record that refers to them begins.
  uint64_t cupti = body_.intern(identity_.cupti_path);
  // Read back to back: the pair relates this process's monotonic times to wall-clock time.
  int64_t mono = monotonic_ns();
  int64_t real = realtime_ns();
  body_.tag(gf::kProcess);
  body_.u(identity_.pid);
  body_.s(identity_.rank);
  body_.s(identity_.local_rank);
  body_.s(identity_.world_size);
  body_.s(mono);
  body_.s(real);
  body_.u(identity_.cupti_version);
  body_.u(cupti);
  for (const auto& entry : devices_) write_device(entry.first);
  for (const auto& [context, device] : contexts_) {
    body_.tag(gf::kContext);
    body_.u(context);
    body_.u(device);
  }
}

void RecordConverter::write_device(uint32_t id) {
  const Device& d = devices_.at(id);
  uint64_t name = body_.intern(d.name);
  uint64_t uuid = body_.intern(d.uuid);
  body_.tag(gf::kDevice);
  body_.u(id);
  body_.u(name);
  body_.u(uuid);
  body_.u(d.sm_count);
  body_.u(d.memory);
  body_.u(d.major);
  body_.u(d.minor);
}

void RecordConverter::end_chunk(std::vector<std::string>& chunks) {
  chunks.push_back(gf::chunk(body_.bytes(), [](const char* data, size_t size) { return store::crc32(data, size); }));
  body_.clear();
}

bool RecordConverter::timed(uint64_t start, uint64_t end) {
  if (start == 0 && end == 0) {
    ++untimed_;
    return false;
  }
  return true;
}

void RecordConverter::time(uint64_t start, uint64_t end) {
  int64_t s = int64_t(start) - clock_offset_;
  int64_t e = end >= start ? s + int64_t(end - start) : s;  // an end before the start: no duration
  body_.time(s, e);
}

const std::string& RecordConverter::api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  uint64_t key = uint64_t(domain) << 32 | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* name = nullptr;
  std::string text;
  if (fn_.get_callback_name != nullptr && fn_.get_callback_name(domain, cbid, &name) == CUPTI_SUCCESS &&
      name != nullptr && *name != '\0') {
    text = strip_version(name);
  } else {
    text = std::string(domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime") + " cbid " + std::to_string(cbid);
  }
  return api_names_.emplace(key, std::move(text)).first->second;
}

const std::string& RecordConverter::kernel_name(const char* mangled) {
  std::string key = mangled != nullptr ? mangled : "";
  auto it = kernel_names_.find(key);
  if (it != kernel_names_.end()) return it->second;
  if (kernel_names_.size() >= kMaxCachedNames) kernel_names_.clear();
  std::string text = demangled_symbol(key);
  return kernel_names_.emplace(std::move(key), std::move(text)).first->second;
}

// A copy record: CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 name the fields kept alike.
template <class Copy>
bool RecordConverter::write_copy(const Copy* m) {
  if (!timed(m->start, m->end)) return false;
  body_.tag(gf::kMemcpy);
  time(m->start, m->end);
  body_.u(m->deviceId);
  body_.u(m->contextId);
  body_.u(m->streamId);
  body_.u(m->correlationId);
  body_.u(m->copyKind);
  body_.u(m->srcKind);
  body_.u(m->dstKind);
  body_.u(m->bytes);
  body_.u(m->flags);
  return true;
}

bool RecordConverter::write_record(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (!timed(k->start, k->end)) return false;
      uint64_t name = body_.intern(kernel_name(k->name));
      body_.tag(gf::kKernel);
      time(k->start, k->end);
      body_.u(k->deviceId);
      body_.u(k->contextId);
      body_.u(k->streamId);
      body_.u(k->correlationId);
      body_.u(clamp_u(k->gridX));
      body_.u(clamp_u(k->gridY));
      body_.u(clamp_u(k->gridZ));
      body_.u(clamp_u(k->blockX));
      body_.u(clamp_u(k->blockY));
      body_.u(clamp_u(k->blockZ));
      body_.u(k->registersPerThread);
      body_.u(clamp_u(k->staticSharedMemory));
      body_.u(clamp_u(k->dynamicSharedMemory));
      body_.u(name);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return write_copy(reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      // Peer copies: the device and context the copy runs on (src/dst are not kept).
      return write_copy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (!timed(m->start, m->end)) return false;
      body_.tag(gf::kMemset);
      time(m->start, m->end);
      body_.u(m->deviceId);
      body_.u(m->contextId);
      body_.u(m->streamId);
      body_.u(m->correlationId);
      body_.u(m->memoryKind);
      body_.u(m->bytes);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      if (!timed(a->start, a->end)) return false;
      bool driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      uint64_t name = body_.intern(api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid));
      body_.tag(gf::kApi);
      time(a->start, a->end);
      body_.u(driver ? 1 : 0);
      body_.u(a->cbid);
      body_.u(name);
      body_.u(a->threadId);
      body_.u(a->correlationId);
      body_.u(a->returnValue);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      if (!timed(s->start, s->end)) return false;
      body_.tag(gf::kSync);
      time(s->start, s->end);
      body_.u(uint32_t(s->type));
      body_.u(s->contextId);
      body_.s(s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : int64_t(s->streamId));
      body_.u(s->correlationId);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      if (!timed(o->start, o->end)) return false;
      uint64_t name = body_.intern(overhead_name(uint32_t(o->overheadKind)));
      body_.tag(gf::kOverhead);
      time(o->start, o->end);
      body_.u(uint32_t(o->overheadKind));
      body_.u(name);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return false;  // written at the top of every chunk
    default:
      ++other_;
      return false;
  }
}

void RecordConverter::convert(const std::vector<FilledBuffer>& buffers, uint64_t dropped_total,
                              std::vector<std::string>& chunks) {
  // Pass 1: devices and contexts, so that the chunks below name every one they refer to.
  for (const FilledBuffer& b : buffers) {
    CUpti_Activity* record = nullptr;
    while (fn_.activity_get_next_record(b.data, b.valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_DEVICE || record->kind == CUPTI_ACTIVITY_KIND_CONTEXT) {
        note_device_or_context(record);
      }
    }
  }
  // Pass 2: everything else. A record cut short (CUPTI_ERROR_INVALID_KIND) ends its buffer.
  begin_chunk();
  for (const FilledBuffer& b : buffers) {
    CUpti_Activity* record = nullptr;
    while (fn_.activity_get_next_record(b.data, b.valid, &record) == CUPTI_SUCCESS) {
      if (!write_record(record)) continue;
      ++records_in_chunk_;
      ++records_written_;
      if (body_.size() >= kChunkTarget) {
        end_chunk(chunks);
        new_devices_ = false;
        begin_chunk();
      }
    }
  }
  dropped_ = dropped_total;
  bool losses_changed = dropped_ != losses_written_[0] || untimed_ != losses_written_[1] || other_ != losses_written_[2];
  if (losses_changed) {
    body_.tag(gf::kLosses);
    body_.u(dropped_);
    body_.u(untimed_);
    body_.u(other_);
    losses_written_[0] = dropped_;
    losses_written_[1] = untimed_;
    losses_written_[2] = other_;
  }
  if (records_in_chunk_ > 0 || losses_changed || new_devices_) {
    end_chunk(chunks);
    new_devices_ = false;
  }
  body_.clear();
}

}  // namespace sprof::gpu::injection
