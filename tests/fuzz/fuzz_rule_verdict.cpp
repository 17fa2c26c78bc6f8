// libFuzzer target: a rule program's answer line (any bytes, any nesting) read as a verdict:
// a result or the reason it is not one, never a crash (100,000 nested brackets overflowed the
// stack), and a reason never longer than a few hundred bytes whatever the line's length.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sprof/custom_rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string line(reinterpret_cast<const char*>(data), size);
  sprof::rules::ProgramRule rule;
  rule.name = "fuzz";
  rule.argv = {"/bin/true"};
  auto verdict = sprof::rules::read_verdict(line, rule, 1, 3);
  if (!verdict.ok() && verdict.error().message.size() > 600) std::abort();
  return 0;
}
