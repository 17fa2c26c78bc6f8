// libFuzzer target: gunzip and the kineto Chrome-trace reader on arbitrary bytes (as JSON text,
// and as gzip data): errors, never crashes, ops never end before they start, and the streaming
// reader gives the same answer wherever its pieces end.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sprof/gpu_trace.hpp"
#include "sprof/gzip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  auto trace = sprof::store::parse_chrome_gpu_trace(input, "fuzz");
  if (trace.ok()) {
    for (const auto& op : trace->ops) {
      if (op.end_ns < op.start_ns) std::abort();
    }
  }
  const size_t piece = size > 0 ? 1 + data[0] % 61 : 1;
  auto pieces = sprof::store::parse_chrome_gpu_trace(input, "fuzz", piece);
  if (pieces.ok() != trace.ok()) std::abort();
  if (trace.ok()) {
    if (pieces->ops.size() != trace->ops.size() || pieces->api_calls.size() != trace->api_calls.size()) std::abort();
    for (size_t i = 0; i < trace->ops.size(); ++i) {
      if (pieces->ops[i].name != trace->ops[i].name || pieces->ops[i].start_ns != trace->ops[i].start_ns) std::abort();
    }
  } else if (pieces.error().message != trace.error().message) {
    std::abort();
  }
  auto plain = sprof::store::gunzip(input, "fuzz", 1 << 20);
  if (plain.ok() && plain->size() > (1 << 20)) std::abort();
  // Round trip: what gzip() writes reads back unchanged.
  auto back = sprof::store::gunzip(sprof::store::gzip(input), "round trip", input.size() + 1);
  if (!back.ok() || *back != input) std::abort();
  return 0;
}
