#pragma once
// The GPU activity file, gpu/<pid>.gpu: what libsprof_cupti.so records in one CUDA process
// (docs/gpu-activity.md). Header only and free of libsprof: the injection library writes with it,
// store's reader (gpu_activity_reader.cpp) reads with it.
//
//   file   = header chunk*
//   header = "SPROFGPU" u32 version u32 header_size(16)
//   chunk  = "SPGC" u32 body_length u32 crc32(body) body
//   body   = record*            (a chunk stands alone: its strings and its process record are its own)
//   record = u8 tag, then the tag's fields: varint (unsigned LEB128), svarint (zigzag), str (a
//            varint index into the strings this chunk defined before it)
//
// Times are CLOCK_MONOTONIC ns (the sampler's clock; CUPTI's timestamp callback returns it); each
// timed record gives `start` as an svarint delta from the previous timed record's start in the
// chunk (the first from 0) and `duration` as a varint. One writer thread appends a chunk at least
// once a second, so a process that dies loses at most the last second; a chunk whose CRC fails
// is skipped by the reader, which looks for the next "SPGC".

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "store/codecs/byte_coding.hpp"

namespace sprof::store::gpufile {

inline constexpr char kFileMagic[8] = {'S', 'P', 'R', 'O', 'F', 'G', 'P', 'U'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kFileHeaderSize = 16;
inline constexpr char kChunkMagic[4] = {'S', 'P', 'G', 'C'};
inline constexpr size_t kChunkPrefixSize = 12;
inline constexpr uint32_t kMaxChunkBody = 64u << 20;

enum Tag : uint8_t {
  // varint length, bytes: the chunk's next string (indices from 0 within the chunk)
  kString = 0x01,
  // varint pid, svarint rank, svarint local rank, svarint world size (-1: not set),
  // svarint clock monotonic ns, svarint clock realtime ns (read back to back), varint cupti version,
  // str cupti path. First record of every chunk.
  kProcess = 0x02,
  // varint device id, str name, str uuid (hex), varint SM count, varint global memory bytes,
  // varint compute major, varint compute minor
  kDevice = 0x03,
  // varint context id, varint device id
  kContext = 0x04,
  // start, duration, varint device, varint context, varint stream, varint correlation,
  // varint grid x, y, z, varint block x, y, z, varint registers per thread, varint static shared,
  // varint dynamic shared, str name (demangled)
  kKernel = 0x10,
  // start, duration, varint device, varint context, varint stream, varint correlation,
  // varint copy kind, varint src kind, varint dst kind, varint bytes, varint flags
  kMemcpy = 0x11,
  // start, duration, varint device, varint context, varint stream, varint correlation,
  // varint memory kind, varint bytes
  kMemset = 0x12,
  // start, duration, varint domain (0 runtime, 1 driver), varint cbid, str name, varint tid,
  // varint correlation, varint return value
  kApi = 0x13,
  // start, duration, varint type, varint context, svarint stream (-1: none), varint correlation
  kSync = 0x14,
  // start, duration, varint overhead kind, str name
  kOverhead = 0x15,
  // varint records CUPTI dropped (cuptiActivityGetNumDroppedRecords), varint records with no
  // timestamps, varint records of kinds not kept
  kLosses = 0x16,
};

// CUPTI's enum values, kept in the file as CUPTI numbers them (cupti_activity.h).
enum CopyKind : uint32_t { kHtoD = 1, kDtoH = 2, kHtoA = 3, kAtoH = 4, kAtoA = 5, kAtoD = 6, kDtoA = 7, kDtoD = 8, kHtoH = 9, kPtoP = 10 };
enum MemoryKind : uint32_t {
  kMemoryPageable = 1, kMemoryPinned = 2, kMemoryDevice = 3, kMemoryArray = 4, kMemoryManaged = 5,
  kMemoryDeviceStatic = 6, kMemoryManagedStatic = 7
};
enum SyncType : uint32_t { kEventSync = 1, kStreamWaitEvent = 2, kStreamSync = 3, kContextSync = 4 };

inline std::string file_header() {
  std::string out(kFileMagic, sizeof kFileMagic);
  bytes::put_u32(out, kFormatVersion);
  bytes::put_u32(out, uint32_t(kFileHeaderSize));
  return out;
}

// Builds one chunk body: strings are interned per chunk, starts are delta-coded. A string is
// interned (which writes its definition if it is new) before the record that refers to it begins.
class ChunkBody {
 public:
  std::string& bytes() { return body_; }
  bool empty() const { return body_.empty(); }
  size_t size() const { return body_.size(); }
  void clear() {
    body_.clear();
    strings_.clear();
    last_start_ = 0;
  }

  uint64_t intern(std::string_view text) {
    auto [it, added] = strings_.try_emplace(std::string(text), strings_.size());
    if (added) {
      body_ += char(kString);
      bytes::put_varint(body_, text.size());
      body_.append(text);
    }
    return it->second;
  }

  void tag(Tag t) { body_ += char(t); }
  void u(uint64_t v) { bytes::put_varint(body_, v); }
  void s(int64_t v) { bytes::put_svarint(body_, v); }
  void time(int64_t start_ns, int64_t end_ns) {
    s(start_ns - last_start_);
    last_start_ = start_ns;
    u(end_ns >= start_ns ? uint64_t(end_ns - start_ns) : 0);
  }

 private:
  std::string body_;
  std::unordered_map<std::string, uint64_t> strings_;
  int64_t last_start_ = 0;
};

// A chunk: prefix (magic, length, CRC) then the body. crc32 is passed in so that this header
// needs no library.
template <typename Crc>
std::string chunk(const std::string& body, Crc crc32) {
  std::string out(kChunkMagic, sizeof kChunkMagic);
  bytes::put_u32(out, uint32_t(body.size()));
  bytes::put_u32(out, crc32(body.data(), body.size()));
  out += body;
  return out;
}

}  // namespace sprof::store::gpufile
