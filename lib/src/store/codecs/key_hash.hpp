#pragma once
// How function keys are hashed: each string once (the reader caches string hashes per
// back-referenced object), then the parts mixed. FunctionKeyHash and hash_function_key agree.

#include <cstdint>
#include <functional>
#include <string_view>

namespace sprof::store {

inline uint64_t hash_text(std::string_view text) { return std::hash<std::string_view>{}(text); }

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
