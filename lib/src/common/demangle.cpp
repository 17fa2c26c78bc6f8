#include "sprof/demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>

#include <llvm/Demangle/Demangle.h>

namespace sprof {

std::string demangled_symbol(std::string_view name) {
  std::string text(name);
  if (!is_mangled_symbol(text)) return text;
  int status = 0;
  char* readable = abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status);
  if (readable == nullptr || status != 0) {
    std::free(readable);
    readable = llvm::itaniumDemangle(text.c_str(), nullptr, nullptr, &status);
    if (readable != nullptr && status != llvm::demangle_success) {
      std::free(readable);
      readable = nullptr;
    }
  }
  if (readable != nullptr) {
    text = readable;
    std::free(readable);
  }
  return text;
}

}  // namespace sprof
