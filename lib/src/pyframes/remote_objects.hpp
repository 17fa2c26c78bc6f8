#pragma once
// Reading Python str and bytes objects out of the target's memory.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pyframes/remote_memory.hpp"

namespace sprof::pyframes {

struct ObjectLayout {
  uint64_t ob_type = 8;
  uint64_t unicode_length = 16;
  uint64_t unicode_state = 32;
  uint64_t ascii_size = 48;    // sizeof(PyASCIIObject): 48 up to 3.11, 40 from 3.12
  uint64_t compact_size = 72;  // sizeof(PyCompactUnicodeObject): 72 / 56
  uint64_t bytes_size = 16;    // ob_size
  uint64_t bytes_data = 32;    // ob_sval
  uint64_t unicode_type = 0;   // &PyUnicode_Type in the target (0: not checked)
  uint64_t bytes_type = 0;     // &PyBytes_Type in the target (0: not checked)
};

// Converts a compact str's characters (kind 1, 2 or 4 bytes per code point, little-endian) to
// UTF-8. Invalid code points become U+FFFD.
std::string ucs_to_utf8(std::span<const uint8_t> data, unsigned kind);

// Limits against torn reads: names and file names longer than this are not real.
inline constexpr uint64_t kMaxStringChars = 4096;
inline constexpr uint64_t kMaxBytesSize = 1 << 20;

// A str object as UTF-8, or nullopt when it is not a readable compact str.
std::optional<std::string> read_str(const RemoteMemory& mem, uint64_t address, const ObjectLayout& layout);
// A bytes object's contents, or nullopt.
std::optional<std::vector<uint8_t>> read_bytes(const RemoteMemory& mem, uint64_t address,
                                               const ObjectLayout& layout, uint64_t max_size = kMaxBytesSize);

}  // namespace sprof::pyframes
