#pragma once
// MD5 (RFC 1321), for S3's ETags: a single-part object's ETag is the MD5 of its bytes, a
// multipart one's the MD5 of its parts' MD5s followed by "-<parts>". Not for security.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sprof::remote {

class Md5 {
 public:
  Md5();
  void update(std::string_view bytes);
  std::array<uint8_t, 16> digest();  // finishes; the object is spent afterwards
  static std::string hex(const std::array<uint8_t, 16>& d);

 private:
  void block(const uint8_t* p);
  uint32_t h_[4];
  uint8_t buffer_[64];
  uint64_t length_ = 0;
};

}  // namespace sprof::remote
