#pragma once
// Finding CPython in a process: which ELF holds the runtime (libpython or the executable),
// where it is loaded, where _PyRuntime is, and which version it is. Nothing is executed:
// the version comes from the _Py_DebugOffsets cookie, then Py_Version, then the version string
// in the interpreter's memory, then the file name.

#include <sys/types.h>

#include <memory>
#include <string>

#include "pyframes/elf_file.hpp"
#include "pyframes/remote_memory.hpp"
#include "sprof/pyframes.hpp"
#include "sprof/result.hpp"

namespace sprof::pyframes {

struct RuntimeLocation {
  std::string image;  // path of the ELF holding the runtime, as the target maps it
  std::shared_ptr<const ElfFile> elf;
  uint64_t bias = 0;     // load bias of that ELF
  uint64_t runtime = 0;  // &_PyRuntime in the target; 0 for 2.7/3.6 (no runtime struct)
  PythonVersion version;
  uint64_t version_hex = 0;  // PY_VERSION_HEX when known
  std::string version_source;  // "_Py_DebugOffsets", "Py_Version", "version string", "file name"
  bool has_debug_offsets = false;
  // Type objects in the target (0 when the symbol is missing).
  uint64_t code_type = 0;
  uint64_t frame_type = 0;
  uint64_t unicode_type = 0;
  uint64_t bytes_type = 0;
  uint64_t dict_type = 0;
  uint64_t long_type = 0;
};

Result<RuntimeLocation> locate_runtime(pid_t pid, const RemoteMemory& mem);

// "3.9.18 (main, ..." somewhere in `bytes`: the first plausible CPython version string.
std::optional<PythonVersion> scan_version_string(std::span<const uint8_t> bytes);
// "libpython3.9.so.1.0" / "python3.11" / "libpython3.7m.so": major and minor from a file name.
std::optional<PythonVersion> version_from_file_name(const std::string& path);

}  // namespace sprof::pyframes
