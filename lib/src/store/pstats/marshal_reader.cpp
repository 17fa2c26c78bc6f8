#include "store/pstats/marshal_reader.hpp"

#include <locale.h>

#include <cstdlib>

#include <fmt/format.h>

namespace sprof::store::marshal {

void Reader::fail(size_t at, std::string message) const {
  throw DecodeError{at, std::move(message)};
}

void Reader::ends_before(const char* what) const {
  fail(offset(), std::string("file ends where ") + what + " should start");
}

void Reader::truncated(size_t n, size_t start) const {
  fail(offset(), fmt::format("file is truncated: the object that starts at byte {} needs {} more "
                             "byte{} but {} {} left",
                             start, n, n == 1 ? "" : "s", remaining(),
                             remaining() == 1 ? "is" : "are"));
}

size_t Reader::length32(size_t start, const char* what) {
  int32_t n = i32(start);
  if (n < 0) fail(start, fmt::format("{} has a negative length ({})", what, n));
  if (static_cast<size_t>(n) > remaining()) truncated(static_cast<size_t>(n), start);
  return static_cast<size_t>(n);
}

int64_t Reader::long_body(size_t start) {
  // marshal.c r_PyLong: int32 n = signed count of 15-bit digits, least significant first.
  int32_t n = i32(start);
  if (n == 0) return 0;
  if (n == INT32_MIN) fail(start, "bad int: digit count out of range");
  size_t count = static_cast<size_t>(n < 0 ? -int64_t{n} : n);
  // Five digits hold 75 bits; with a nonzero top digit six or more never fit in 64.
  if (count > 5) {
    fail(start, fmt::format("int with {} base-2**15 digits does not fit in 64 bits", count));
  }
  need(2 * count, start);
  unsigned __int128 magnitude = 0;
  for (size_t i = 0; i < count; ++i) {
    uint32_t digit = uint32_t(p_[2 * i]) | uint32_t(p_[2 * i + 1]) << 8;
    if (digit >= (1u << 15)) {
      fail(start, fmt::format("bad int: digit {} is 0x{:04x}, out of range", i, digit));
    }
    if (i == count - 1 && digit == 0) fail(start, "bad int: unnormalized (top digit is zero)");
    magnitude |= static_cast<unsigned __int128>(digit) << (15 * i);
  }
  p_ += 2 * count;
  const unsigned __int128 limit = static_cast<unsigned __int128>(INT64_MAX) + (n < 0 ? 1 : 0);
  if (magnitude > limit) fail(start, "int does not fit in 64 bits");
  if (n < 0) return static_cast<int64_t>(0 - static_cast<uint64_t>(magnitude));
  return static_cast<int64_t>(magnitude);
}

namespace {

bool ieq(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// The syntax PyOS_string_to_double accepts: [sign] (digits [. digits] | . digits) [e [sign]
// digits], or [sign] inf / infinity / nan in any case. No spaces, underscores or hex.
bool is_float_repr(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::string_view rest = s.substr(i);
  if (ieq(rest, "inf") || ieq(rest, "infinity") || ieq(rest, "nan")) return true;
  auto digits = [&] {
    size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

locale_t c_locale() {
  static locale_t locale = newlocale(LC_ALL_MASK, "C", nullptr);
  return locale;
}

}  // namespace

double Reader::float_text_body(size_t start) {
  size_t n = u8(start);
  std::string text(bytes(n, start));
  if (!is_float_repr(text)) {
    fail(start, fmt::format("bad float text {:?}", text));
  }
  // glibc's strtod rounds correctly and, like CPython, gives inf on overflow and 0 or a
  // subnormal on underflow; the C locale keeps '.' the decimal point.
  return strtod_l(text.c_str(), nullptr, c_locale());
}

void append_latin1_as_utf8(std::string_view s, std::string& out) {
  out.reserve(out.size() + s.size() * 2);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

}  // namespace sprof::store::marshal
