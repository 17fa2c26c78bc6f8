#pragma once
// Type codes of Python's marshal format (CPython Python/marshal.c). A code byte is a type
// with an optional FLAG_REF bit asking the reader to remember the object for later 'r' refs.

#include <cstdint>
#include <string>
#include <string_view>

namespace sprof::store::marshal {

inline constexpr uint8_t kFlagRef = 0x80;

enum Type : uint8_t {
  kNull = '0',  // ends a dict
  kNone = 'N',
  kFalse = 'F',
  kTrue = 'T',
  kStopIteration = 'S',
  kEllipsis = '.',
  kInt = 'i',    // int32
  kInt64 = 'I',  // int64, no longer written but still read by CPython
  kFloat = 'f',  // uint8 length + ASCII repr (marshal version <= 1)
  kBinaryFloat = 'g',
  kComplex = 'x',
  kBinaryComplex = 'y',
  kLong = 'l',  // int32 signed digit count + base-2**15 digits
  kBytes = 's',
  kInterned = 't',
  kRef = 'r',
  kTuple = '(',
  kList = '[',
  kDict = '{',
  kCode = 'c',
  kUnicode = 'u',
  kUnknown = '?',
  kSet = '<',
  kFrozenSet = '>',
  kSlice = ':',  // CPython 3.14
  kAscii = 'a',
  kAsciiInterned = 'A',
  kSmallTuple = ')',
  kShortAscii = 'z',
  kShortAsciiInterned = 'Z',
};

// What a code byte denotes, for error messages: "a code object", "a list", "an unknown type code
// 0x07".
std::string describe_code(uint8_t code);

// Text checks both sides need: the writer picks the ASCII types, the reader validates.
bool is_ascii(std::string_view s);
// UTF-8 as CPython decodes it with errors="surrogatepass": well-formed UTF-8, plus the
// three-byte encodings of lone surrogates (U+D800..U+DFFF).
bool is_utf8_surrogatepass(std::string_view s);

}  // namespace sprof::store::marshal
