// DEFLATE decoding (RFC 1951) in the canonical-Huffman style of zlib's reference decoder "puff":
// codes are decoded a bit at a time against per-length counts, which is small and easy to check
// on hostile input. Every read is bounds-checked; errors carry what went wrong.

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include "sprof/gzip.hpp"
#include "store/codecs/crc32.hpp"
#include "store/codecs/deflate_tables.hpp"

namespace sprof::store {
namespace {

using namespace deflate;

constexpr int kMaxBits = 15;

struct Huffman {
  std::array<uint16_t, kMaxBits + 1> count{};
  std::array<uint16_t, 288> symbol{};
};

// Output is handed on in pieces once over this size, keeping DEFLATE's 32 KiB window.
constexpr size_t kFlushAt = size_t(1) << 20;
constexpr size_t kWindow = size_t(32) << 10;

class Inflater {
 public:
  // `out` holds the window: empty at the start of a member (back references stay inside it).
  // `max_output` counts what earlier members gave too (`before`).
  Inflater(std::string_view in, size_t pos, std::string& out, size_t before, size_t max_output, const TextSink& sink)
      : in_(in), pos_(pos), out_(out), before_(before), max_(max_output), sink_(sink) {}

  // Decodes one DEFLATE stream, handing every byte to the sink; returns nullptr or what was
  // wrong (sink_error() when the sink refused a piece).
  const char* run() {
    bool last = false;
    while (!last) {
      int header = bits(3);
      if (header < 0) return "truncated block header";
      last = (header & 1) != 0;
      int type = header >> 1;
      const char* err = type == 0 ? stored() : type == 1 ? fixed() : type == 2 ? dynamic() : "invalid block type 3";
      if (err != nullptr) return err;
      if (out_.size() >= kFlushAt && !flush(kWindow)) return "";
    }
    return flush(0) ? nullptr : "";
  }
  size_t position() const { return pos_; }  // byte after the stream (bits dropped)
  uint32_t crc() const { return crc_; }
  uint64_t length() const { return flushed_; }
  const std::optional<Error>& sink_error() const { return sink_error_; }

 private:
  // Hands on all but the last `keep` bytes.
  bool flush(size_t keep) {
    if (out_.size() <= keep) return true;
    size_t n = out_.size() - keep;
    std::string_view piece(out_.data(), n);
    crc_ = crc32(piece.data(), piece.size(), crc_);
    flushed_ += n;
    if (auto status = sink_(piece); !status.ok()) {
      sink_error_ = status.error();
      return false;
    }
    out_.erase(0, n);
    return true;
  }
  size_t produced() const { return before_ + flushed_ + out_.size(); }

  int bits(int need) {
    int64_t value = bit_buffer_;
    while (bit_count_ < need) {
      if (pos_ >= in_.size()) return -1;
      value |= int64_t(uint8_t(in_[pos_++])) << bit_count_;
      bit_count_ += 8;
    }
    bit_buffer_ = value >> need;
    bit_count_ -= need;
    return int(value & ((int64_t(1) << need) - 1));
  }

  const char* stored() {
    bit_buffer_ = 0;
    bit_count_ = 0;
    if (in_.size() - pos_ < 4) return "truncated stored block";
    unsigned len = uint8_t(in_[pos_]) | unsigned(uint8_t(in_[pos_ + 1])) << 8;
    unsigned nlen = uint8_t(in_[pos_ + 2]) | unsigned(uint8_t(in_[pos_ + 3])) << 8;
    pos_ += 4;
    if (len != (~nlen & 0xFFFF)) return "stored block length does not match its complement";
    if (in_.size() - pos_ < len) return "truncated stored block";
    if (produced() + len > max_) return "output over the size limit";
    out_.append(in_.data() + pos_, len);
    pos_ += len;
    return nullptr;
  }

  // Decodes one symbol; -1 truncated, -2 no such code.
  int decode(const Huffman& h) {
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= kMaxBits; ++len) {
      int bit = bits(1);
      if (bit < 0) return -1;
      code |= bit;
      int count = h.count[size_t(len)];
      if (code - count < first) return h.symbol[size_t(index + (code - first))];
      index += count;
      first += count;
      first <<= 1;
      code <<= 1;
    }
    return -2;
  }

  // Builds a decoder from code lengths; false when over-subscribed. (Incomplete codes are
  // allowed only as RFC 1951 allows: a single distance code.)
  static bool build(Huffman& h, const uint8_t* lengths, int n, bool& incomplete) {
    h.count.fill(0);
    for (int i = 0; i < n; ++i) ++h.count[lengths[i]];
    if (h.count[0] == n) {
      incomplete = true;
      return true;
    }
    int left = 1;
    for (int len = 1; len <= kMaxBits; ++len) {
      left <<= 1;
      left -= h.count[size_t(len)];
      if (left < 0) return false;
    }
    std::array<uint16_t, kMaxBits + 1> offsets{};
    for (int len = 1; len < kMaxBits; ++len) offsets[size_t(len + 1)] = uint16_t(offsets[size_t(len)] + h.count[size_t(len)]);
    for (int i = 0; i < n; ++i) {
      if (lengths[i] != 0) h.symbol[offsets[lengths[i]]++] = uint16_t(i);
    }
    incomplete = left > 0;
    return true;
  }

  const char* codes(const Huffman& lengths, const Huffman& distances) {
    for (;;) {
      int symbol = decode(lengths);
      if (symbol == -1) return "truncated compressed data";
      if (symbol < 0) return "invalid literal/length code";
      if (symbol < 256) {
        if (produced() >= max_) return "output over the size limit";
        out_ += char(symbol);
        continue;
      }
      if (symbol == 256) return nullptr;
      symbol -= 257;
      if (symbol >= 29) return "invalid length symbol";
      int extra = bits(kLengthExtra[symbol]);
      if (extra < 0) return "truncated compressed data";
      size_t len = kLengthBase[symbol] + size_t(extra);
      int dsym = decode(distances);
      if (dsym == -1) return "truncated compressed data";
      if (dsym < 0 || dsym >= 30) return "invalid distance code";
      int dextra = bits(kDistExtra[dsym]);
      if (dextra < 0) return "truncated compressed data";
      size_t dist = kDistBase[dsym] + size_t(dextra);
      if (dist > out_.size()) return "distance too far back";
      if (produced() + len > max_) return "output over the size limit";
      size_t from = out_.size() - dist;
      for (size_t i = 0; i < len; ++i) out_ += out_[from + i];  // may overlap what it writes
    }
  }

  const char* fixed() {
    static const auto tables = [] {
      std::pair<Huffman, Huffman> t;
      uint8_t lengths[288];
      for (int i = 0; i < 144; ++i) lengths[i] = 8;
      for (int i = 144; i < 256; ++i) lengths[i] = 9;
      for (int i = 256; i < 280; ++i) lengths[i] = 7;
      for (int i = 280; i < 288; ++i) lengths[i] = 8;
      bool incomplete = false;
      build(t.first, lengths, 288, incomplete);
      for (int i = 0; i < 30; ++i) lengths[i] = 5;
      build(t.second, lengths, 30, incomplete);
      return t;
    }();
    return codes(tables.first, tables.second);
  }

  const char* dynamic() {
    static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    int nlen = bits(5), ndist = bits(5), ncode = bits(4);
    if (nlen < 0 || ndist < 0 || ncode < 0) return "truncated dynamic block header";
    nlen += 257;
    ndist += 1;
    ncode += 4;
    if (nlen > 286 || ndist > 30) return "bad counts in a dynamic block header";
    uint8_t lengths[320] = {};
    for (int i = 0; i < ncode; ++i) {
      int v = bits(3);
      if (v < 0) return "truncated dynamic block header";
      lengths[kOrder[i]] = uint8_t(v);
    }
    Huffman code_lengths, lencode, distcode;
    bool incomplete = false;
    if (!build(code_lengths, lengths, 19, incomplete) || incomplete) return "bad code-length code";
    int index = 0;
    while (index < nlen + ndist) {
      int symbol = decode(code_lengths);
      if (symbol == -1) return "truncated dynamic block header";
      if (symbol < 0) return "invalid code-length code";
      if (symbol < 16) {
        lengths[index++] = uint8_t(symbol);
        continue;
      }
      int len = 0, repeat = 0;
      if (symbol == 16) {
        if (index == 0) return "repeat of a length with no previous length";
        len = lengths[index - 1];
        repeat = bits(2);
        if (repeat >= 0) repeat += 3;
      } else if (symbol == 17) {
        repeat = bits(3);
        if (repeat >= 0) repeat += 3;
      } else {
        repeat = bits(7);
        if (repeat >= 0) repeat += 11;
      }
      if (repeat < 0) return "truncated dynamic block header";
      if (index + repeat > nlen + ndist) return "code lengths run past their count";
      while (repeat-- > 0) lengths[index++] = uint8_t(len);
    }
    if (lengths[256] == 0) return "no end-of-block code";
    if (!build(lencode, lengths, nlen, incomplete) || (incomplete && nlen - lencode.count[0] != 1)) {
      return "bad literal/length code lengths";
    }
    if (!build(distcode, lengths + nlen, ndist, incomplete) || (incomplete && ndist - distcode.count[0] != 1)) {
      return "bad distance code lengths";
    }
    return codes(lencode, distcode);
  }

  std::string_view in_;
  size_t pos_;
  std::string& out_;
  size_t before_;
  size_t max_;
  const TextSink& sink_;
  uint32_t crc_ = 0;
  uint64_t flushed_ = 0;
  std::optional<Error> sink_error_;
  int64_t bit_buffer_ = 0;
  int bit_count_ = 0;
};

uint32_t le32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(b[at + size_t(i)])) << (8 * i);
  return v;
}

}  // namespace

bool is_gzip(std::string_view bytes) { return bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1F && uint8_t(bytes[1]) == 0x8B; }

Result<std::string> gunzip(std::string_view in, const std::string& source, size_t max_output) {
  std::string out;
  SPROF_TRY_STATUS(gunzip_stream(in, source, max_output, [&](std::string_view piece) -> Status {
    out += piece;
    return {};
  }));
  return out;
}

Status gunzip_stream(std::string_view in, const std::string& source, size_t max_output, const TextSink& sink) {
  std::string window;
  size_t total = 0;
  size_t pos = 0;
  int members = 0;
  while (pos < in.size()) {
    // Trailing zero padding after the last member is accepted, as gzip does.
    if (members > 0 && in.find_first_not_of('\0', pos) == std::string_view::npos) break;
    if (in.size() - pos < 18 || !is_gzip(in.substr(pos))) {
      return make_error(ErrorKind::bad_input, "{}: {}", source, members == 0 ? "not gzip data" : "trailing bytes after the gzip data");
    }
    if (uint8_t(in[pos + 2]) != 8) return make_error(ErrorKind::bad_input, "{}: unknown gzip compression method {}", source, int(uint8_t(in[pos + 2])));
    uint8_t flags = uint8_t(in[pos + 3]);
    if ((flags & 0xE0) != 0) return make_error(ErrorKind::bad_input, "{}: reserved gzip header flags set", source);
    size_t at = pos + 10;
    if (flags & 0x04) {  // FEXTRA
      if (in.size() - at < 2) return make_error(ErrorKind::bad_input, "{}: truncated gzip header", source);
      size_t xlen = uint8_t(in[at]) | size_t(uint8_t(in[at + 1])) << 8;
      at += 2 + xlen;
    }
    for (uint8_t flag : {uint8_t(0x08), uint8_t(0x10)}) {  // FNAME, FCOMMENT: zero-terminated
      if ((flags & flag) == 0) continue;
      size_t end = at < in.size() ? in.find('\0', at) : std::string_view::npos;
      if (end == std::string_view::npos) return make_error(ErrorKind::bad_input, "{}: truncated gzip header", source);
      at = end + 1;
    }
    if (flags & 0x02) at += 2;  // FHCRC
    if (at > in.size()) return make_error(ErrorKind::bad_input, "{}: truncated gzip header", source);
    window.clear();
    Inflater inflater(in, at, window, total, max_output, sink);
    if (const char* err = inflater.run()) {
      if (inflater.sink_error()) return *inflater.sink_error();
      return make_error(ErrorKind::bad_input, "{}: gzip data is damaged ({})", source, err);
    }
    total += inflater.length();
    at = inflater.position();
    if (in.size() - at < 8) return make_error(ErrorKind::bad_input, "{}: gzip data is truncated (no trailer)", source);
    if (inflater.crc() != le32(in, at)) return make_error(ErrorKind::bad_input, "{}: gzip data is damaged (CRC-32 mismatch)", source);
    if (uint32_t(inflater.length()) != le32(in, at + 4)) {
      return make_error(ErrorKind::bad_input, "{}: gzip data is damaged (length mismatch)", source);
    }
    pos = at + 8;
    ++members;
  }
  if (members == 0) return make_error(ErrorKind::bad_input, "{}: empty, not gzip data", source);
  return {};
}

}  // namespace sprof::store
