#pragma once
// How function keys are hashed: each string once (the reader caches string hashes per
// back-referenced object), then the parts mixed. FunctionKeyHash and hash_function_key agree.

#include <cstdint>
#include <cstring>
#include <string_view>

namespace sprof::store {

// A str's hash and whether it is all ASCII, in one pass over its bytes: the reader needs both
// for every string it meets (marshal's ASCII types are Latin-1 unless every byte is < 0x80),
// and two passes (std::hash, then a scan) were ~15 % of reading a file. Eight bytes at a
// time; a short tail is read as overlapping words (or, under four bytes, as its first, middle
// and last byte) so that no byte-sized loop or memcpy call is needed. Only the open-addressing
// tables in memory use the hash (combine_key_hash mixes it further); nothing stores it.
struct TextScan {
  uint64_t hash;
  bool ascii;
};

inline TextScan scan_text(std::string_view text) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const char* p = text.data();
  size_t n = text.size();
  uint64_t h = 0xC2B2AE3D27D4EB4Full ^ (n * kMul);
  uint64_t bits = 0;  // every byte OR-ed in: its 0x80 bits say whether any byte is not ASCII
  auto mix = [&h](uint64_t word) {
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  };
  auto load64 = [](const char* at) {
    uint64_t word;
    std::memcpy(&word, at, 8);
    return word;
  };
  auto load32 = [](const char* at) {
    uint32_t word;
    std::memcpy(&word, at, 4);
    return uint64_t{word};
  };
  if (n >= 8) {
    const char* last = p + n - 8;
    for (; p < last; p += 8) {
      uint64_t word = load64(p);
      bits |= word;
      mix(word);
    }
    uint64_t word = load64(last);  // the last eight bytes, overlapping the loop's last word
    bits |= word;
    mix(word);
  } else if (n >= 4) {
    uint64_t word = load32(p) | load32(p + n - 4) << 32;
    bits |= word;
    mix(word);
  } else if (n > 0) {
    uint64_t word = uint64_t{static_cast<uint8_t>(p[0])} | uint64_t{static_cast<uint8_t>(p[n / 2])} << 8 |
                    uint64_t{static_cast<uint8_t>(p[n - 1])} << 16;
    bits |= word;
    mix(word);
  }
  return {h, (bits & 0x8080808080808080ull) == 0};
}

inline uint64_t hash_text(std::string_view text) { return scan_text(text).hash; }

inline uint64_t combine_key_hash(uint64_t file_hash, int64_t line, uint64_t name_hash) {
  uint64_t h = file_hash ^ (name_hash * 0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(line) * 0xC2B2AE3D27D4EB4Full);
  // splitmix64's finalizer: the low bits pick the open-addressing slot, so mix them well.
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31;
  return h;
}

}  // namespace sprof::store
