#include "sprof/result.hpp"

namespace sprof {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::bad_input: return "bad input";
    case ErrorKind::io: return "I/O";
    case ErrorKind::permission: return "permission";
    case ErrorKind::not_python: return "not Python";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::runtime: return "runtime";
  }
  return "runtime";
}

}  // namespace sprof
