#include "store/pstats/marshal_format.hpp"

#include <cstring>

#include <fmt/format.h>

namespace sprof::store::marshal {

std::string describe_code(uint8_t code) {
  switch (static_cast<uint8_t>(code & ~kFlagRef)) {
    case kNull: return "the end-of-dict marker (NULL)";
    case kNone: return "None";
    case kFalse: return "False";
    case kTrue: return "True";
    case kStopIteration: return "StopIteration";
    case kEllipsis: return "Ellipsis";
    case kInt:
    case kInt64:
    case kLong: return "an int";
    case kFloat:
    case kBinaryFloat: return "a float";
    case kComplex:
    case kBinaryComplex: return "a complex";
    case kBytes: return "a bytes object";
    case kInterned:
    case kUnicode:
    case kAscii:
    case kAsciiInterned:
    case kShortAscii:
    case kShortAsciiInterned: return "a str";
    case kRef: return "a back-reference";
    case kTuple:
    case kSmallTuple: return "a tuple";
    case kList: return "a list";
    case kDict: return "a dict";
    case kCode: return "a code object";
    case kUnknown: return "an unmarshallable object ('?')";
    case kSet: return "a set";
    case kFrozenSet: return "a frozenset";
    case kSlice: return "a slice";
    default: return fmt::format("an unknown type code 0x{:02x}", code);
  }
}

bool is_ascii(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    if (word & 0x8080808080808080ull) return false;
  }
  for (; i < n; ++i) {
    if (static_cast<unsigned char>(p[i]) & 0x80) return false;
  }
  return true;
}

bool is_utf8_surrogatepass(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  size_t i = 0;
  auto cont = [&](size_t k) { return i + k < n && (p[i + k] & 0xC0) == 0x80; };
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      if (!cont(1)) return false;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      if (!cont(1) || !cont(2)) return false;
      // E0 needs A0..BF (no overlong forms); ED A0..BF are the surrogates surrogatepass lets by.
      if (c == 0xE0 && p[i + 1] < 0xA0) return false;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      if (!cont(1) || !cont(2) || !cont(3)) return false;
      if (c == 0xF0 && p[i + 1] < 0x90) return false;  // overlong
      if (c == 0xF4 && p[i + 1] > 0x8F) return false;  // beyond U+10FFFF
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace sprof::store::marshal
