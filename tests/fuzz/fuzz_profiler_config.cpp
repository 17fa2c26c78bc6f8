// libFuzzer target: smdebug's profilerconfig.json reader (`record --profiler-config`) on
// arbitrary bytes. It must never crash: deep nesting, a Python dict literal inside a string,
// wrong types and out-of-range numbers are errors that name the file.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <spdlog/spdlog.h>

#include "sprof/profiling_window.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);  // its warnings (unknown keys) would flood the output
    return true;
  }();
  (void)quiet;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = sprof::window::parse_profiler_config(text, "fuzz/profilerconfig.json");
  if (!config.ok() && config.error().message.find("fuzz/profilerconfig.json") == std::string::npos) std::abort();
  return 0;
}
