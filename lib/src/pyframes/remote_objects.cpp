#include "pyframes/remote_objects.hpp"

#include <algorithm>

namespace sprof::pyframes {
namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

std::string ucs_to_utf8(std::span<const uint8_t> data, unsigned kind) {
  std::string out;
  out.reserve(data.size());
  if (kind != 1 && kind != 2 && kind != 4) return out;
  for (size_t i = 0; i + kind <= data.size(); i += kind) {
    uint32_t cp = data[i];
    if (kind >= 2) cp |= uint32_t{data[i + 1]} << 8;
    if (kind == 4) cp |= uint32_t{data[i + 2]} << 16 | uint32_t{data[i + 3]} << 24;
    append_utf8(out, cp);
  }
  return out;
}

std::optional<std::string> read_str(const RemoteMemory& mem, uint64_t address, const ObjectLayout& layout) {
  // One read covers the header and the characters of most names; longer ones take a second.
  uint8_t buf[256];
  size_t got = mem.read_partial(address, buf, sizeof(buf));
  if (address == 0 || got < layout.compact_size) return std::nullopt;
  if (layout.unicode_type != 0 && load<uint64_t>(buf, layout.ob_type) != layout.unicode_type) {
    return std::nullopt;
  }
  int64_t length = load<int64_t>(buf, layout.unicode_length);
  uint32_t state = load<uint32_t>(buf, layout.unicode_state);
  unsigned kind = (state >> 2) & 7;
  bool compact = (state & 0x20) != 0;
  bool ascii = (state & 0x40) != 0;
  if (length < 0 || static_cast<uint64_t>(length) > kMaxStringChars || !compact ||
      (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) {
    return std::nullopt;
  }
  uint64_t data_offset = ascii ? layout.ascii_size : layout.compact_size;
  size_t nbytes = static_cast<size_t>(length) * kind;
  std::vector<uint8_t> chars(nbytes);
  size_t have = got > data_offset ? std::min(nbytes, got - data_offset) : 0;
  std::copy_n(buf + data_offset, have, chars.begin());
  if (have < nbytes && !mem.read(address + data_offset + have, chars.data() + have, nbytes - have)) {
    return std::nullopt;
  }
  if (ascii) return std::string(chars.begin(), chars.end());
  return ucs_to_utf8(chars, kind);
}

std::optional<std::vector<uint8_t>> read_bytes(const RemoteMemory& mem, uint64_t address,
                                               const ObjectLayout& layout, uint64_t max_size) {
  uint8_t buf[512];
  size_t got = mem.read_partial(address, buf, sizeof(buf));
  if (address == 0 || got < layout.bytes_data) return std::nullopt;
  if (layout.bytes_type != 0 && load<uint64_t>(buf, layout.ob_type) != layout.bytes_type) {
    return std::nullopt;
  }
  int64_t size = load<int64_t>(buf, layout.bytes_size);
  if (size < 0 || static_cast<uint64_t>(size) > max_size) return std::nullopt;
  std::vector<uint8_t> out(static_cast<size_t>(size));
  size_t have = std::min(out.size(), got - layout.bytes_data);
  std::copy_n(buf + layout.bytes_data, have, out.begin());
  if (have < out.size() &&
      !mem.read(address + layout.bytes_data + have, out.data() + have, out.size() - have)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace sprof::pyframes
