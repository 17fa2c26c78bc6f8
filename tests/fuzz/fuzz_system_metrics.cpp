// libFuzzer target: the system-metrics JSON-lines parser on arbitrary bytes. It must never crash;
// what it accepts it must write back as lines it accepts again, with the same values.

#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string>

#include "sprof/system_metrics.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto metrics = sprof::store::parse_system_metrics(text, "fuzz");
  if (!metrics.ok()) return 0;
  std::string again;
  for (const auto& m : *metrics) {
    // The writer takes whole microseconds; keep the value but not a timestamp it cannot represent.
    again += sprof::store::format_system_metric_line({m.type, m.name, m.dimension, m.value}, m.node_id, 1700000000000000);
    again += '\n';
  }
  auto back = sprof::store::parse_system_metrics(again, "fuzz-again");
  if (!back.ok() || back->size() != metrics->size()) std::abort();
  for (size_t i = 0; i < back->size(); ++i) {
    const auto& a = (*metrics)[i];
    const auto& b = (*back)[i];
    bool same_value = a.value == b.value || !std::isfinite(a.value);
    if (a.type != b.type || a.name != b.name || a.dimension != b.dimension || a.node_id != b.node_id || !same_value) {
      std::abort();
    }
  }
  return 0;
}
