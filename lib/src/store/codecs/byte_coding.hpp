#pragma once
// Little-endian fixed-width and LEB128 varint coding, and a bounds-checked cursor over untrusted
// bytes: shared by the chunked binary formats (the sample log, the GPU activity file). Header
// only and free of libsprof, so that libsprof_cupti.so can write with it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sprof::store::bytes {

inline void put_u32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = char((v >> (8 * i)) & 0xFF);
  out.append(b, 4);
}

inline uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}

inline void put_varint(std::string& out, uint64_t v) {
  char b[10];
  int n = 0;
  while (v >= 0x80) {
    b[n++] = char((v & 0x7F) | 0x80);
    v >>= 7;
  }
  b[n++] = char(v);
  out.append(b, size_t(n));
}

inline uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

inline void put_svarint(std::string& out, int64_t v) { put_varint(out, zigzag(v)); }

// Bounds-checked cursor over untrusted bytes: every read reports failure instead of overrunning.
class Cursor {
 public:
  Cursor(const char* begin, const char* end) : p_(begin), end_(end) {}

  bool done() const { return p_ >= end_; }
  size_t left() const { return size_t(end_ - p_); }

  bool byte(uint8_t& v) {
    if (p_ >= end_) return false;
    v = uint8_t(*p_++);
    return true;
  }

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return false;
      uint8_t b = uint8_t(*p_++);
      v |= uint64_t(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return shift < 63 || b <= 1;
    }
    return false;
  }

  bool svarint(int64_t& v) {
    uint64_t u = 0;
    if (!varint(u)) return false;
    v = unzigzag(u);
    return true;
  }

  bool bytes(size_t n, std::string_view& out) {
    if (left() < n) return false;
    out = std::string_view(p_, n);
    p_ += n;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace sprof::store::bytes
