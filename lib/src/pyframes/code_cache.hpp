#pragma once
// Code objects seen in the target, keyed by address. A hit is re-validated against the code
// object's header as just read (its string and table pointers and first line), because an
// address can be reused by a new code object after the old one is freed. Each distinct
// (filename, name, first line) gets a small dense id (CodeInfo::id).

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "pyframes/layout.hpp"
#include "pyframes/line_table.hpp"
#include "pyframes/remote_memory.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::pyframes {

struct CodeRecord {
  uint32_t code_id = 0;
  // Identity, compared with the header on every hit.
  uint64_t filename_ptr = 0;
  uint64_t name_ptr = 0;
  uint64_t linetable_ptr = 0;
  int32_t first_line = 0;
  int64_t code_units = -1;  // 3.11+: length of the bytecode in code units
  bool hidden = false;      // interpreter-internal frames never shown (3.12 shims, 3.13 __init__ cleanup)
  LineTable lines;
};

class CodeCache {
 public:
  CodeCache(const Layout& layout, const RemoteMemory& mem) : layout_(layout), mem_(mem) {}

  // `header` holds layout.code_read_size bytes read at `address` (its type already checked).
  // Returns nullptr when the strings or line table cannot be read (a torn or freed object).
  const CodeRecord* resolve(uint64_t address, const uint8_t* header);

  const CodeInfo& info(uint32_t id) const { return infos_.at(id); }
  size_t size() const { return records_.size(); }
  uint64_t misses() const { return misses_; }

 private:
  uint32_t intern(const std::string& filename, const std::string& name, int32_t first_line);

  const Layout& layout_;
  const RemoteMemory& mem_;
  std::unordered_map<uint64_t, CodeRecord> records_;
  std::map<std::tuple<std::string, std::string, int32_t>, uint32_t> ids_;
  std::deque<CodeInfo> infos_;  // deque: references stay valid as it grows
  uint64_t misses_ = 0;
};

// Upper bound on cached code objects; past it the cache starts over (ids are kept).
inline constexpr size_t kMaxCachedCodes = 200000;

}  // namespace sprof::pyframes
