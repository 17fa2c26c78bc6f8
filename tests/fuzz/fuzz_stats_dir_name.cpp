// libFuzzer target for the stats-directory name parser. Any input either fails with a
// bad_input error or parses; what parses must format to a name that parses to the same values.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sprof/stats_dir.hpp"

using namespace sprof::store;

namespace {

bool same_point(const StepPoint& a, const StepPoint& b) {
  return a.mode == b.mode && a.step == b.step && a.phase == b.phase &&
         (a.time_us == b.time_us);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_stats_dir_name(text);
  if (!parsed.ok()) {
    if (parsed.error().kind != sprof::ErrorKind::bad_input) std::abort();
    return 0;
  }
  std::string formatted = format_stats_dir_name(*parsed);
  auto again = parse_stats_dir_name(formatted);
  if (!again.ok()) std::abort();
  if (again->format != parsed->format || again->node_id != parsed->node_id) std::abort();
  if (!same_point(again->start, parsed->start) || !same_point(again->end, parsed->end)) {
    std::abort();
  }
  if (format_stats_dir_name(*again) != formatted) std::abort();
  return 0;
}
