#include "store/marshal_format.hpp"

#include <fmt/format.h>

namespace sprof::store::marshal {

std::string describe_code(uint8_t code) {
  switch (static_cast<uint8_t>(code & ~kFlagRef)) {
    case kNull: return "the end-of-dict marker (NULL)";
    case kNone: return "None";
    case kFalse: return "False";
    case kTrue: return "True";
    case kStopIteration: return "StopIteration";
    case kEllipsis: return "Ellipsis";
    case kInt:
    case kInt64:
    case kLong: return "an int";
    case kFloat:
    case kBinaryFloat: return "a float";
    case kComplex:
    case kBinaryComplex: return "a complex";
    case kBytes: return "a bytes object";
    case kInterned:
    case kUnicode:
    case kAscii:
    case kAsciiInterned:
    case kShortAscii:
    case kShortAsciiInterned: return "a str";
    case kRef: return "a back-reference";
    case kTuple:
    case kSmallTuple: return "a tuple";
    case kList: return "a list";
    case kDict: return "a dict";
    case kCode: return "a code object";
    case kUnknown: return "an unmarshallable object ('?')";
    case kSet: return "a set";
    case kFrozenSet: return "a frozenset";
    case kSlice: return "a slice";
    default: return fmt::format("an unknown type code 0x{:02x}", code);
  }
}

}  // namespace sprof::store::marshal
