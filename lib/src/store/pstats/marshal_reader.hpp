#pragma once
// A bounds-checked cursor over marshal bytes and the decoders for marshal's scalar encodings
// (ints, longs, floats, strings), following CPython's Python/marshal.c. Errors are thrown as
// DecodeError and turned into sprof::Error by the parser's entry points; nothing here allocates
// more than the input holds.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sprof::store::marshal {

struct DecodeError {
  size_t offset = 0;    // where in the input the problem is
  std::string message;  // what is wrong, without the file name
};

class Reader {
 public:
  explicit Reader(std::string_view bytes)
      : begin_(reinterpret_cast<const uint8_t*>(bytes.data())),
        p_(begin_),
        end_(begin_ + bytes.size()) {}

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool at_end() const { return p_ == end_; }

  // The next type code; at the end of input "file ends where <what> should start".
  uint8_t code(const char* what) {
    if (p_ == end_) [[unlikely]] ends_before(what);
    return *p_++;
  }
  // The next type code without consuming it (the caller checked !at_end()).
  uint8_t peek() const { return *p_; }

  // Fixed-size little-endian fields of the object that began at `start`.
  uint8_t u8(size_t start) {
    need(1, start);
    return *p_++;
  }
  int32_t i32(size_t start) {
    need(4, start);
    uint32_t v = uint32_t(p_[0]) | uint32_t(p_[1]) << 8 | uint32_t(p_[2]) << 16 |
                 uint32_t(p_[3]) << 24;
    p_ += 4;
    return static_cast<int32_t>(v);
  }
  int64_t i64(size_t start) {
    need(8, start);
    uint64_t v;
    std::memcpy(&v, p_, 8);  // marshal is little-endian, as is every platform sprof targets
    p_ += 8;
    return static_cast<int64_t>(v);
  }
  double f64(size_t start) {
    need(8, start);
    double v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  std::string_view bytes(size_t n, size_t start) {
    need(n, start);
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  // An int32 length as strings and tuples carry it: negative is corrupt, and more than the
  // input has left is a truncated file (checked before anything is sized from it).
  size_t length32(size_t start, const char* what);

  // The body of a 'l' (long) object; must fit in int64.
  int64_t long_body(size_t start);
  // The body of an 'f' (float as text) object.
  double float_text_body(size_t start);

  [[noreturn]] void fail(size_t at, std::string message) const;
  // "file ends where <what> should start"
  [[noreturn, gnu::cold, gnu::noinline]] void ends_before(const char* what) const;

 private:
  void need(size_t n, size_t start) const {
    if (static_cast<size_t>(end_ - p_) < n) [[unlikely]] truncated(n, start);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void truncated(size_t n, size_t start) const;

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
};

// marshal's ASCII string types are read byte-per-code-point (Latin-1); store them as UTF-8.
void append_latin1_as_utf8(std::string_view s, std::string& out);

}  // namespace sprof::store::marshal
