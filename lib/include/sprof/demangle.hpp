#pragma once
// Kernel names as people read them: a mangled C++ name (CUPTI gives them so, and kineto traces keep
// some, e.g. cutlass's) demangled. Only "_Z..." names are: the demangler would also read a plain
// kernel name such as "i" as a type ("int"). GNU's demangler (__cxa_demangle) first, LLVM's where
// it refuses (it does for some long cutlass names that LLVM's and nvcc's tools read); a name that
// neither can read stays as it is, as does one that is not mangled (extern "C", Triton's).

#include <string>
#include <string_view>

namespace sprof {

inline bool is_mangled_symbol(std::string_view name) { return name.size() > 2 && name.substr(0, 2) == "_Z"; }

std::string demangled_symbol(std::string_view name);

}  // namespace sprof
