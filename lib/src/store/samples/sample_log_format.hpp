#pragma once
// Byte-level constants and varint coding of the sample log (docs/sample-log.md), shared by the
// writer and the reader.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "store/codecs/byte_coding.hpp"

namespace sprof::store::samplelog {

inline constexpr char kFileMagic[8] = {'S', 'P', 'R', 'O', 'F', 'L', 'O', 'G'};
// Version 2 adds ChunkStart to every chunk header; version 1 files are still read.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestFormatVersion = 1;
inline constexpr size_t kFileHeaderSize = 16;  // magic, u32 version, u32 header size

inline constexpr char kChunkMagic[4] = {'S', 'P', 'C', 'K'};
inline constexpr size_t kChunkPrefixSize = 12;  // magic, u32 body length, u32 CRC-32 of the body
inline constexpr uint32_t kMaxChunkBody = 64u << 20;

// Definition records (the first part of a chunk body).
enum DefTag : uint8_t {
  kDefString = 0x01,      // varint length, bytes
  kDefFunction = 0x02,    // varint file string, varint name string, svarint first line
  kDefFrame = 0x03,       // varint function, svarint line
  kDefStackNode = 0x04,   // varint parent stack, varint leaf frame
  kDefThread = 0x05,      // varint python thread id, svarint native tid
  kDefThreadName = 0x06,  // varint thread, varint name string
  kDefProcess = 0x07,     // varint pid, varint ppid, varint version string, varint exe string,
                          // svarint attach time (µs)
  kDefInvalid = 0x08,     // varint count of dropped thread samples
  kDefStringPrefix = 0x09,  // varint base string, varint prefix length, varint suffix length,
                            // suffix bytes: the first `prefix length` bytes of the base, then the suffix
  kDefStackChain = 0x0A,    // varint parent stack, varint n, n varint frames: n new stacks, each
                            // the previous one (the parent first) plus one more inner frame
};

// What the chunks before one hold (v2): thread samples, and the number of strings, functions,
// frames, stacks (not counting stack 0), threads and processes they define.
struct ChunkStart {
  uint64_t samples = 0;
  uint64_t strings = 0;
  uint64_t functions = 0;
  uint64_t frames = 0;
  uint64_t stacks = 0;
  uint64_t threads = 0;
  uint64_t processes = 0;
};

// Sample records (the second part). Low two bits: the kind; bit 2: an explicit weight follows.
inline constexpr uint8_t kTickTag = 0x10;        // dt, [weight], n, n entries
inline constexpr uint8_t kTickRepeatTag = 0x11;  // dt, [weight]; entries as the previous tick
inline constexpr uint8_t kTickWeightBit = 0x04;
// Entry: varint (thread << 3 | same_stack << 2 | gil << 1 | idle), then varint stack unless
// same_stack (the thread's previous stack in this chunk).
inline constexpr uint32_t kEntrySameStack = 4;

using bytes::Cursor;
using bytes::get_u32;
using bytes::put_svarint;
using bytes::put_u32;
using bytes::put_varint;
using bytes::unzigzag;
using bytes::zigzag;

inline void put_chunk_start(std::string& out, const ChunkStart& s) {
  for (uint64_t v : {s.samples, s.strings, s.functions, s.frames, s.stacks, s.threads, s.processes}) put_varint(out, v);
}

inline bool read_chunk_start(Cursor& c, ChunkStart& s) {
  return c.varint(s.samples) && c.varint(s.strings) && c.varint(s.functions) && c.varint(s.frames) &&
         c.varint(s.stacks) && c.varint(s.threads) && c.varint(s.processes);
}

}  // namespace sprof::store::samplelog
