// libFuzzer target: the GPU activity reader (gpu/<pid>.gpu) on arbitrary bytes. It must never
// crash, and every op it accepts must have a non-negative duration and its process's pid.
// As for the sample log, the input is also read as chunk bodies in valid framing (split at each
// "\xff\xfe" pair), so that mutations reach the record decoder past the CRC.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sprof/gpu_trace.hpp"
#include "store/codecs/crc32.hpp"
#include "store/gpu/gpu_activity_format.hpp"

namespace {

void check(const std::string& bytes) {
  sprof::store::GpuTrace trace;
  if (!sprof::store::parse_gpu_activity(bytes, "fuzz", trace).ok()) return;
  for (const auto& op : trace.ops) {
    if (op.end_ns < op.start_ns) std::abort();
  }
}

std::string framed(std::string_view input) {
  namespace f = sprof::store::gpufile;
  std::string out = f::file_header();
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find("\xff\xfe", start);
    if (end == std::string_view::npos) end = input.size();
    out += f::chunk(std::string(input.substr(start, end - start)),
                    [](const char* p, size_t n) { return sprof::store::crc32(p, n); });
    start = end + 2;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  check(std::string(input));
  check(framed(input));
  return 0;
}
