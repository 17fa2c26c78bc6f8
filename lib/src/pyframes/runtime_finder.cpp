#include "pyframes/runtime_finder.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include "pyframes/layout.hpp"
#include "pyframes/proc_maps.hpp"

namespace sprof::pyframes {
namespace {

bool is_libpython(const std::string& path) {
  static const std::regex pattern(R"(libpython\d+\.\d+[a-z]*\.so)");
  std::string base = std::filesystem::path(path).filename().string();
  return std::regex_search(base, pattern) && base.rfind("libpython", 0) == 0;
}

std::string strip_deleted(std::string path) {
  const std::string suffix = " (deleted)";
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    path.resize(path.size() - suffix.size());
  }
  return path;
}

// Load bias of the file mapped from `path`: the start of its lowest mapping of file offset 0.
std::optional<uint64_t> load_bias(const std::vector<MemoryMap>& maps, const std::string& path, const ElfFile& elf) {
  std::optional<uint64_t> start;
  for (const MemoryMap& m : maps) {
    if (m.offset != 0 || strip_deleted(m.path) != path) continue;
    if (!start || m.start < *start) start = m.start;
  }
  if (!start) return std::nullopt;
  return *start - elf.base_vaddr();
}

bool parse_number(std::span<const uint8_t> b, size_t& i, int& out, int max_digits) {
  size_t start = i;
  out = 0;
  while (i < b.size() && std::isdigit(b[i]) && i - start < static_cast<size_t>(max_digits)) {
    out = out * 10 + (b[i] - '0');
    ++i;
  }
  return i > start && !(i < b.size() && std::isdigit(b[i]));
}

}  // namespace

std::optional<PythonVersion> scan_version_string(std::span<const uint8_t> b) {
  // sys.version starts "X.Y.Z[suffix] (": e.g. "3.9.18 (main, Jan  1 2024, ...)".
  for (size_t i = 0; i + 6 < b.size(); ++i) {
    if ((b[i] != '2' && b[i] != '3') || b[i + 1] != '.' || (i > 0 && (std::isalnum(b[i - 1]) || b[i - 1] == '.'))) {
      continue;
    }
    size_t j = i;
    PythonVersion v;
    if (!parse_number(b, j, v.major, 1) || j >= b.size() || b[j] != '.') continue;
    ++j;
    if (!parse_number(b, j, v.minor, 2) || j >= b.size() || b[j] != '.') continue;
    ++j;
    if (!parse_number(b, j, v.micro, 3)) continue;
    size_t k = j;
    while (k < b.size() && k - j < 12 && (std::isalnum(b[k]) || b[k] == '+')) ++k;
    if (k + 1 < b.size() && b[k] == ' ' && b[k + 1] == '(') return v;
  }
  return std::nullopt;
}

std::optional<PythonVersion> version_from_file_name(const std::string& path) {
  static const std::regex pattern(R"(^(?:lib)?python(\d)\.(\d+)[a-z]*(?:\.so.*)?$)");
  std::smatch m;
  std::string base = std::filesystem::path(path).filename().string();
  if (!std::regex_match(base, m, pattern)) return std::nullopt;
  PythonVersion v;
  v.major = std::stoi(m[1].str());
  v.minor = std::stoi(m[2].str());
  return v;
}

Result<RuntimeLocation> locate_runtime(pid_t pid, const RemoteMemory& mem) {
  SPROF_TRY(std::vector<MemoryMap> maps, read_maps(pid));
  std::string exe_link = fmt::format("/proc/{}/exe", pid);
  char buf[4096];
  ssize_t n = readlink(exe_link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) {
    int err = errno;
    if (err == EACCES || err == EPERM) {
      return make_error(ErrorKind::permission, "cannot read {}: {}; {}", exe_link, std::strerror(err),
                        permission_remedies(pid));
    }
    return make_error(ErrorKind::io, "no process with pid {} ({}: {})", pid, exe_link, std::strerror(err));
  }
  std::string exe = strip_deleted(std::string(buf, static_cast<size_t>(n)));

  // Candidates: a mapped libpython first, then the executable (static builds).
  std::vector<std::pair<std::string, std::string>> candidates;  // (path in maps, path to open)
  for (const MemoryMap& m : maps) {
    std::string path = strip_deleted(m.path);
    if (!path.empty() && path[0] == '/' && is_libpython(path)) {
      candidates.emplace_back(path, fmt::format("/proc/{}/root{}", pid, path));
      break;
    }
  }
  candidates.emplace_back(exe, exe_link);

  std::string tried;
  for (const auto& [image, open_path] : candidates) {
    auto elf = ElfFile::open(open_path, image);
    if (!elf.ok()) {
      if (elf.error().kind == ErrorKind::permission) return std::move(elf).error();
      tried += fmt::format("; {}: {}", image, elf.error().message);
      continue;
    }
    const ElfFile& file = **elf;
    auto bias = load_bias(maps, image, file);
    if (!bias) {
      tried += fmt::format("; {}: not mapped at file offset 0", image);
      continue;
    }
    RuntimeLocation loc;
    if (auto sym = file.symbol("_PyRuntime")) {
      loc.runtime = *sym + *bias;
    } else if (auto section = file.section(".PyRuntime")) {
      loc.runtime = section->address + *bias;
    }
    auto py_version = file.symbol("Py_Version");
    bool python = loc.runtime != 0 || py_version || file.symbol("Py_GetVersion") || file.symbol("PyEval_EvalFrameEx") ||
                  file.symbol("_PyEval_EvalFrameDefault");
    if (!python) continue;

    loc.image = image;
    loc.elf = *elf;
    loc.bias = *bias;
    auto type_at = [&](const char* name) -> uint64_t {
      auto sym = file.symbol(name);
      return sym ? *sym + *bias : 0;
    };
    loc.code_type = type_at("PyCode_Type");
    loc.frame_type = type_at("PyFrame_Type");
    loc.unicode_type = type_at("PyUnicode_Type");
    loc.bytes_type = type_at("PyBytes_Type");
    loc.dict_type = type_at("PyDict_Type");
    loc.long_type = type_at("PyLong_Type");

    // Version: debug-offsets cookie, Py_Version, the sys.version string, the file name.
    uint8_t head[24] = {};
    if (loc.runtime != 0 && mem.read(loc.runtime, head, sizeof(head)) &&
        std::memcmp(head, kDebugCookie, sizeof(kDebugCookie)) == 0) {
      loc.has_debug_offsets = true;
      loc.version_hex = load<uint64_t>(head, 8);
      loc.version_source = "_Py_DebugOffsets";
    } else if (py_version) {
      uint32_t hex = 0;
      if (mem.read_value(*py_version + *bias, hex) && (hex >> 24) == 3) {
        loc.version_hex = hex;
        loc.version_source = "Py_Version";
      }
    }
    if (loc.version_hex != 0) {
      loc.version.major = static_cast<int>((loc.version_hex >> 24) & 0xff);
      loc.version.minor = static_cast<int>((loc.version_hex >> 16) & 0xff);
      loc.version.micro = static_cast<int>((loc.version_hex >> 8) & 0xff);
      return loc;
    }
    for (const char* name : {".bss", ".data"}) {
      auto section = file.section(name);
      if (!section || section->size == 0 || section->size > (16u << 20)) continue;
      std::vector<uint8_t> bytes(section->size);
      size_t got = mem.read_partial(section->address + *bias, bytes.data(), bytes.size());
      bytes.resize(got);
      if (auto v = scan_version_string(bytes)) {
        loc.version = *v;
        loc.version_source = "version string";
        return loc;
      }
    }
    for (const std::string& path : {image, exe}) {
      if (auto v = version_from_file_name(path)) {
        loc.version = *v;
        loc.version_source = "file name";
        return loc;
      }
    }
    return make_error(ErrorKind::not_python,
                      "process {} runs Python ({}), but its version cannot be read yet (it may still be starting)",
                      pid, image);
  }
  return make_error(ErrorKind::not_python,
                    "process {} ({}) is not a CPython interpreter: no libpython is mapped and {} has no Python "
                    "runtime symbols{}",
                    pid, exe, exe, tried);
}

}  // namespace sprof::pyframes
