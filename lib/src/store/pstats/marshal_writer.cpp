#include "store/pstats/marshal_writer.hpp"

#include <cstring>

#include "store/pstats/marshal_format.hpp"

namespace sprof::store::marshal {

void Writer::u32(uint32_t value) {
  char bytes[4] = {static_cast<char>(value), static_cast<char>(value >> 8),
                   static_cast<char>(value >> 16), static_cast<char>(value >> 24)};
  out_.append(bytes, 4);
}

void Writer::tuple(size_t n, bool remember) {
  uint8_t flag = remember ? kFlagRef : 0;
  if (remember) ++refs_;
  if (n < 256) {
    out_.push_back(static_cast<char>(kSmallTuple | flag));
    out_.push_back(static_cast<char>(n));
  } else {
    out_.push_back(static_cast<char>(kTuple | flag));
    u32(static_cast<uint32_t>(n));
  }
}

void Writer::integer(int64_t value) {
  if (value >= INT32_MIN && value <= INT32_MAX) {
    out_.push_back(static_cast<char>(kInt));
    u32(static_cast<uint32_t>(static_cast<int32_t>(value)));
    return;
  }
  // 'l': signed count of base-2**15 digits, least significant first (marshal.c w_PyLong).
  uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  uint16_t digits[5];
  int32_t count = 0;
  while (magnitude != 0) {
    digits[count++] = static_cast<uint16_t>(magnitude & 0x7FFF);
    magnitude >>= 15;
  }
  out_.push_back(static_cast<char>(kLong));
  u32(static_cast<uint32_t>(value < 0 ? -count : count));
  for (int32_t i = 0; i < count; ++i) {
    out_.push_back(static_cast<char>(digits[i] & 0xFF));
    out_.push_back(static_cast<char>(digits[i] >> 8));
  }
}

void Writer::real(double value) {
  out_.push_back(static_cast<char>(kBinaryFloat));
  char bytes[8];
  std::memcpy(bytes, &value, 8);  // little-endian host, as marshal requires
  out_.append(bytes, 8);
}

void Writer::str(std::string_view text) {
  auto [it, inserted] = strings_.try_emplace(text, refs_);
  if (!inserted) {
    ref(it->second);
    return;
  }
  ++refs_;
  if (is_ascii(text)) {
    if (text.size() < 256) {
      out_.push_back(static_cast<char>(kShortAscii | kFlagRef));
      out_.push_back(static_cast<char>(text.size()));
    } else {
      out_.push_back(static_cast<char>(kAscii | kFlagRef));
      u32(static_cast<uint32_t>(text.size()));
    }
  } else {
    out_.push_back(static_cast<char>(kUnicode | kFlagRef));
    u32(static_cast<uint32_t>(text.size()));
  }
  out_.append(text);
}

void Writer::ref(uint32_t index) {
  out_.push_back(static_cast<char>(kRef));
  u32(index);
}

}  // namespace sprof::store::marshal
