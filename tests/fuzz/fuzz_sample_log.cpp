// libFuzzer target: the sample-log reader on arbitrary bytes. It must never crash, and what it
// accepts must be fully iterable with every id in range.
//
// Chunks carry a CRC-32, which random mutations almost never satisfy, so the input is also read
// as chunk bodies wrapped in valid framing (split at each "\xff\xfe" pair), to reach the
// definition and sample decoders.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/sample_log.hpp"
#include "store/codecs/crc32.hpp"
#include "store/samples/sample_log_format.hpp"

namespace {

void check(std::string bytes) {
  auto log = sprof::store::SampleLog::parse(std::move(bytes));
  if (!log.ok()) return;
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
  uint64_t in_range = 0;
  log->for_each_sample(log->first_ns(), log->first_ns() + 1'000'000, [&](const auto&) { ++in_range; });
  if (in_range > seen) std::abort();
}

std::string framed(std::string_view input) {
  namespace fmt = sprof::store::samplelog;
  std::string out(fmt::kFileMagic, sizeof fmt::kFileMagic);
  fmt::put_u32(out, fmt::kFormatVersion);
  fmt::put_u32(out, uint32_t(fmt::kFileHeaderSize));
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find("\xff\xfe", start);
    if (end == std::string_view::npos) end = input.size();
    std::string_view body = input.substr(start, end - start);
    out.append(fmt::kChunkMagic, sizeof fmt::kChunkMagic);
    fmt::put_u32(out, uint32_t(body.size()));
    fmt::put_u32(out, sprof::store::crc32(body.data(), body.size()));
    out.append(body);
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
