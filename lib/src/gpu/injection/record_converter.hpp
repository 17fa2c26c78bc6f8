#pragma once
// CUPTI activity records to chunks of the GPU activity file (store/gpu_activity_format.hpp).
// Runs on the writer thread only. Records are read through prefix views of the CUDA 13.0
// structs: newer record versions only append fields, so the fields read here sit at the same
// offsets in every version a 12.x or 13.x CUPTI writes (checked with static_asserts against the
// deprecated structs), and the loaded library's cuptiActivityGetNextRecord knows the strides.

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/injection/activity_buffers.hpp"
#include "gpu/injection/cupti_library.hpp"
#include "store/gpu/gpu_activity_format.hpp"

namespace sprof::gpu::injection {

// What every chunk's process record says.
struct ProcessIdentity {
  uint32_t pid = 0;
  int64_t rank = -1;  // RANK, LOCAL_RANK, WORLD_SIZE; -1 when unset or not a number
  int64_t local_rank = -1;
  int64_t world_size = -1;
  uint32_t cupti_version = 0;
  std::string cupti_path;
};

// An integer environment variable, or -1.
int64_t env_int(const char* name);

class RecordConverter {
 public:
  RecordConverter(const CuptiFunctions& fn, ProcessIdentity identity);

  // CUPTI's time minus this is CLOCK_MONOTONIC ns: 0 when CUPTI uses our timestamp callback,
  // else the measured CLOCK_REALTIME - CLOCK_MONOTONIC.
  void set_clock_offset(int64_t offset_ns) { clock_offset_ = offset_ns; }

  // The records of `buffers` as whole chunks (prefix and body) appended to `chunks`: each starts
  // with the process record and every device and context seen so far, so that it stands alone;
  // a kLosses record ends the last one when the loss counts changed. Nothing when there is
  // nothing new. dropped_total: records lost so far (CUPTI's count and the discard buffer's).
  void convert(const std::vector<FilledBuffer>& buffers, uint64_t dropped_total, std::vector<std::string>& chunks);

  uint64_t records_written() const { return records_written_; }
  uint64_t untimed() const { return untimed_; }

 private:
  void begin_chunk();
  void end_chunk(std::vector<std::string>& chunks);
  void note_device_or_context(const CUpti_Activity* record);
  void write_device(uint32_t id);
  bool write_record(const CUpti_Activity* record);  // false: not a record written
  template <class Copy>
  bool write_copy(const Copy* record);
  bool timed(uint64_t start, uint64_t end);
  void time(uint64_t start, uint64_t end);
  const std::string& api_name(CUpti_CallbackDomain domain, uint32_t cbid);
  const std::string& kernel_name(const char* mangled);

  struct Device {
    std::string name;
    std::string uuid;
    uint64_t sm_count = 0;
    uint64_t memory = 0;
    uint32_t major = 0;
    uint32_t minor = 0;
  };

  const CuptiFunctions& fn_;
  ProcessIdentity identity_;
  int64_t clock_offset_ = 0;
  store::gpufile::ChunkBody body_;
  size_t records_in_chunk_ = 0;
  std::map<uint32_t, Device> devices_;
  std::map<uint32_t, uint32_t> contexts_;  // context id -> device id
  bool new_devices_ = false;
  std::unordered_map<uint64_t, std::string> api_names_;  // (domain << 32 | cbid)
  std::unordered_map<std::string, std::string> kernel_names_;
  uint64_t records_written_ = 0;
  uint64_t untimed_ = 0;
  uint64_t other_ = 0;
  uint64_t dropped_ = 0;
  uint64_t losses_written_[3] = {0, 0, 0};
};

}  // namespace sprof::gpu::injection
