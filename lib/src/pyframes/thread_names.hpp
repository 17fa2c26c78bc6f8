#pragma once
// Thread names from the target's threading module: sys.modules["threading"]._active maps
// threading.get_ident() to the Thread object, whose _name is the name. Needs per-version dict
// layouts (combined, split and, from 3.11, managed/inline instance dicts). Slow (hundreds of
// small reads): meant for once per new thread, not per sample.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "pyframes/layout.hpp"
#include "pyframes/remote_memory.hpp"
#include "pyframes/runtime_finder.hpp"

namespace sprof::pyframes {

class ThreadNames {
 public:
  ThreadNames(const Layout& layout, const RemoteMemory& mem, const RuntimeLocation& loc)
      : layout_(layout), mem_(mem), loc_(loc) {}

  std::optional<std::string> lookup(uint64_t interp, uint64_t python_thread_id);

  // Visits (key, value) of a dict object; returns false if it cannot be read.
  bool for_each_item(uint64_t dict, const std::function<bool(uint64_t key, uint64_t value)>& visit) const;
  // The value of a str key in a dict, or 0.
  uint64_t find_str(uint64_t dict, const std::string& key) const;
  // An attribute from an instance's __dict__ (plain, split, managed or inline), or 0.
  uint64_t instance_attribute(uint64_t object, const std::string& name) const;
  // A PyLong's value when it is a non-negative integer that fits 64 bits.
  std::optional<uint64_t> read_uint(uint64_t object) const;

 private:
  bool for_each_keys_entry(uint64_t keys, uint64_t values, uint64_t values_offset,
                           const std::function<bool(uint64_t, uint64_t)>& visit) const;

  const Layout& layout_;
  const RemoteMemory& mem_;
  const RuntimeLocation& loc_;
};

}  // namespace sprof::pyframes
