// DEFLATE encoding: greedy LZ77 over a 32 KiB window (hash chains of 3-byte prefixes, a bounded
// search), coded with the fixed Huffman codes of RFC 1951 3.2.6. Chrome traces repeat names and
// keys constantly, so matching does most of the work; dynamic codes would gain another ~20 %.

#include <array>
#include <cstdint>
#include <vector>

#include "sprof/gzip.hpp"
#include "store/codecs/crc32.hpp"
#include "store/codecs/deflate_tables.hpp"

namespace sprof::store {
namespace {

using namespace deflate;

constexpr size_t kWindow = 32768;
constexpr size_t kMinMatch = 3;
constexpr size_t kMaxMatch = 258;
constexpr int kHashBits = 15;
constexpr int kMaxChain = 64;

class BitWriter {
 public:
  explicit BitWriter(std::string& out) : out_(out) {}
  void put(uint32_t value, int count) {  // LSB first
    buffer_ |= uint64_t(value) << bits_;
    bits_ += count;
    while (bits_ >= 8) {
      out_ += char(buffer_ & 0xFF);
      buffer_ >>= 8;
      bits_ -= 8;
    }
  }
  void huffman(uint32_t code, int length) {  // Huffman codes go most significant bit first
    uint32_t reversed = 0;
    for (int i = 0; i < length; ++i) reversed |= ((code >> i) & 1) << (length - 1 - i);
    put(reversed, length);
  }
  void flush() {
    if (bits_ > 0) out_ += char(buffer_ & 0xFF);
    buffer_ = 0;
    bits_ = 0;
  }

 private:
  std::string& out_;
  uint64_t buffer_ = 0;
  int bits_ = 0;
};

void literal_or_length(BitWriter& w, unsigned symbol) {
  if (symbol < 144) w.huffman(0x30 + symbol, 8);
  else if (symbol < 256) w.huffman(0x190 + symbol - 144, 9);
  else if (symbol < 280) w.huffman(symbol - 256, 7);
  else w.huffman(0xC0 + symbol - 280, 8);
}

void match(BitWriter& w, size_t length, size_t distance) {
  int l = 28;
  while (kLengthBase[l] > length) --l;
  literal_or_length(w, unsigned(257 + l));
  w.put(uint32_t(length - kLengthBase[l]), kLengthExtra[l]);
  int d = 29;
  while (kDistBase[d] > distance) --d;
  w.huffman(uint32_t(d), 5);
  w.put(uint32_t(distance - kDistBase[d]), kDistExtra[d]);
}

uint32_t hash3(const unsigned char* p) {
  return ((uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]) * 2654435761u) >> (32 - kHashBits);
}

// One final block with fixed codes covering all of `data`.
void fixed_block(std::string_view data, std::string& out) {
  BitWriter w(out);
  w.put(1, 1);  // BFINAL
  w.put(1, 2);  // BTYPE 01: fixed codes
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  std::vector<int64_t> head(size_t(1) << kHashBits, -1);
  std::vector<int64_t> prev(kWindow, -1);
  auto insert = [&](size_t at) {
    if (at + kMinMatch > n) return;
    uint32_t h = hash3(p + at);
    prev[at % kWindow] = head[h];
    head[h] = int64_t(at);
  };
  size_t i = 0;
  while (i < n) {
    size_t best_len = 0, best_dist = 0;
    if (i + kMinMatch <= n) {
      int64_t candidate = head[hash3(p + i)];
      size_t limit = std::min(kMaxMatch, n - i);
      for (int chain = 0; candidate >= 0 && chain < kMaxChain; ++chain) {
        size_t dist = i - size_t(candidate);
        if (dist > kWindow - 1 || dist == 0) break;
        const unsigned char* a = p + candidate;
        const unsigned char* b = p + i;
        if (a[best_len] == b[best_len]) {
          size_t len = 0;
          while (len < limit && a[len] == b[len]) ++len;
          if (len > best_len) {
            best_len = len;
            best_dist = dist;
            if (len == limit) break;
          }
        }
        int64_t next = prev[size_t(candidate) % kWindow];
        if (next >= candidate) break;  // the slot was reused by a newer position
        candidate = next;
      }
    }
    if (best_len >= kMinMatch) {
      match(w, best_len, best_dist);
      for (size_t k = 0; k < best_len; ++k) insert(i + k);
      i += best_len;
    } else {
      literal_or_length(w, p[i]);
      insert(i);
      ++i;
    }
  }
  literal_or_length(w, 256);
  w.flush();
}

void stored_blocks(std::string_view data, std::string& out) {
  size_t i = 0;
  do {
    size_t len = std::min<size_t>(65535, data.size() - i);
    bool last = i + len == data.size();
    out += char(last ? 1 : 0);
    out += char(len & 0xFF);
    out += char(len >> 8);
    out += char(~len & 0xFF);
    out += char((~len >> 8) & 0xFF);
    out.append(data.data() + i, len);
    i += len;
  } while (i < data.size());
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += char((v >> (8 * i)) & 0xFF);
}

}  // namespace

std::string gzip(std::string_view data) {
  std::string out = {char(0x1F), char(0x8B), 8, 0, 0, 0, 0, 0, 0, char(3)};  // no flags, no mtime, OS Unix
  std::string body;
  fixed_block(data, body);
  if (body.size() > data.size() + 5 * (data.size() / 65535 + 1)) {
    body.clear();
    stored_blocks(data, body);
  }
  out += body;
  put_le32(out, crc32(data.data(), data.size()));
  put_le32(out, uint32_t(data.size()));
  return out;
}

}  // namespace sprof::store
