#pragma once
// Code objects seen in the target, keyed by address. An address can be reused by a new code
// object after the old one is freed (a module's code is freed right after its import, and the
// next code object often lands at the same address, even within one sampling interval), so
// every sample reads the header of each code object on its stacks and compares it with the
// record (its string and table pointers and first line) before the record names a frame; a new
// record's header is read again after its strings, so that one copied while a code object was
// being built there names nothing rather than a mix of two. Each distinct (filename, name,
// first line) gets a small dense id (CodeInfo::id).

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "pyframes/layout.hpp"
#include "pyframes/line_table.hpp"
#include "pyframes/remote_memory.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::pyframes {

// What a record is compared by: the header's string and table pointers and first line.
struct CodeIdentity {
  uint64_t filename_ptr = 0;
  uint64_t name_ptr = 0;
  uint64_t linetable_ptr = 0;
  int32_t first_line = 0;
  bool operator==(const CodeIdentity&) const = default;
};

struct CodeRecord {
  uint32_t code_id = 0;
  CodeIdentity identity;    // compared with the header on every hit
  int64_t code_units = -1;  // 3.11+: length of the bytecode in code units
  bool hidden = false;      // interpreter-internal frames never shown (3.12 shims, 3.13 __init__ cleanup)
  LineTable lines;
  // (offset, line) of the last lookups: a sampled frame mostly sits where it sat last tick.
  struct LineMemo {
    int64_t offset = -2;
    int32_t line = 0;
  };
  mutable LineMemo memo[2];
  int32_t line_at(int64_t offset) const;
};

// Upper bound on cached code objects; past it the cache starts over (ids are kept).
inline constexpr size_t kMaxCachedCodes = 200000;

class CodeCache {
 public:
  CodeCache(const Layout& layout, const RemoteMemory& mem) : layout_(layout), mem_(mem) {}

  // `header` holds layout.code_read_size bytes read at `address` (its type already checked).
  // Returns nullptr when the strings or line table cannot be read (a torn or freed object).
  const CodeRecord* resolve(uint64_t address, const uint8_t* header);
  // Call once per sample of the process, before its stacks are read. Past kMaxCachedCodes the
  // cache starts over here, where no caller holds a record.
  void begin_sample() {
    if (records_.size() >= kMaxCachedCodes) records_.clear();
  }

  const CodeInfo& info(uint32_t id) const { return infos_.at(id); }
  size_t size() const { return records_.size(); }
  uint64_t misses() const { return misses_; }

 private:
  uint32_t intern(const std::string& filename, const std::string& name, int32_t first_line);
  CodeIdentity identity(const uint8_t* header) const;

  const Layout& layout_;
  const RemoteMemory& mem_;
  std::unordered_map<uint64_t, CodeRecord> records_;
  std::map<std::tuple<std::string, std::string, int32_t>, uint32_t> ids_;
  std::deque<CodeInfo> infos_;  // deque: references stay valid as it grows
  uint64_t misses_ = 0;
  std::vector<uint8_t> header_again_;
};

// CLOCK_MONOTONIC_COARSE in ns (a vDSO read: a few ns).
int64_t coarse_now_ns();

}  // namespace sprof::pyframes
