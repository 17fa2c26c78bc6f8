// libFuzzer target: the sample-log reader on arbitrary bytes. It must never crash, and what it
// accepts must be fully iterable with every id in range.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sprof/sample_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto log = sprof::store::SampleLog::parse(std::string(reinterpret_cast<const char*>(data), size));
  if (!log.ok()) return 0;
  std::vector<uint32_t> frames;
  uint64_t seen = 0;
  int64_t previous = INT64_MIN;
  log->for_each_sample([&](const sprof::store::SampleRecord& r) {
    if (r.thread >= log->threads().size() || r.stack >= log->stack_nodes().size()) std::abort();
    if (r.time_ns < previous) std::abort();  // samples come in time order within a log
    previous = r.time_ns;
    log->stack_frames(r.stack, frames);
    for (uint32_t f : frames) {
      if (f >= log->frames().size() || log->frames()[f].function >= log->functions().size()) std::abort();
    }
    ++seen;
  });
  if (seen != log->sample_count()) std::abort();
  // A range query returns a subset.
  uint64_t in_range = 0;
  log->for_each_sample(log->first_ns(), log->first_ns() + 1'000'000, [&](const auto&) { ++in_range; });
  if (in_range > seen) std::abort();
  return 0;
}
