// libFuzzer target: the marker stream parser and the step timeline built from what it accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "sprof/markers.hpp"
#include "sprof/step_timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  sprof::store::MarkerParser parser(256);
  std::vector<sprof::store::Marker> markers;
  // Two reads, split where the first byte says: exercises reassembly of partial lines.
  size_t split = size > 0 ? data[0] % (size + 1) : 0;
  parser.feed(bytes.substr(0, split), markers);
  parser.feed(bytes.substr(split), markers);
  parser.finish();
  auto timeline = sprof::timeline::build_step_timeline(markers);
  for (const auto& process : timeline.processes) {
    for (const auto& interval : process.intervals) {
      if (interval.end.t_ns < interval.start.t_ns) __builtin_trap();
    }
  }
  return 0;
}
