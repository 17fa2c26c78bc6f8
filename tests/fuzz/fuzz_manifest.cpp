// libFuzzer target: the sprof.json reader on arbitrary bytes. It must never crash (deep nesting,
// wrong types, huge numbers); what it accepts it must write back as a manifest it reads again.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "sprof/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = sprof::store::parse_manifest(text, "fuzz/sprof.json");
  if (!manifest.ok()) return 0;
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("sprof-fuzz-manifest-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("sprof-fuzz-manifest-" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  if (!sprof::store::write_manifest(dir, *manifest).ok()) std::abort();
  auto back = sprof::store::read_manifest(dir);
  if (!back.ok() || back->command != manifest->command || back->target_pid != manifest->target_pid ||
      back->processes.size() != manifest->processes.size()) {
    std::abort();
  }
  return 0;
}
