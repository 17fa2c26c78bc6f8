// libFuzzer target: the Chrome-trace (pevents) parser on arbitrary bytes. It must never crash, and
// every event it returns must end no earlier than it starts.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sprof/trace_events.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  sprof::store::TraceEventParser parser(sprof::store::TraceSource::python_timeline);
  std::vector<sprof::store::TraceEvent> events;
  if (!parser.parse(text, "7-algo-1", "fuzz", events).ok()) return 0;
  // A second file through the same parser (state carries over) must be as safe.
  (void)parser.parse(text, "x", "fuzz", events);
  for (const auto& e : events) {
    (void)e.args.text("step_num");
    (void)e.args.integer("pid");
  }
  return 0;
}
