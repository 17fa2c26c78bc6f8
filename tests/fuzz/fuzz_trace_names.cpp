// libFuzzer target: record's trace-name templates (--trace-folder, --trace-filename) on arbitrary
// text: a usage error or a template, never a crash; an expansion whose variables hold hostile
// values stays bounded, and those values bring no '/', NUL or control character into it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sprof/trace_windows.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto t = sprof::traces::NameTemplate::parse(text, "--trace-filename");
  if (!t.ok()) return 0;
  sprof::traces::TraceVariables v;
  v.run_name = std::string("../\0\x1b/..", 8);
  v.mode = "..";
  v.rank = -1;
  v.batch = INT64_MAX;
  std::string out = t->expand(v);
  // Each field adds at most a 255-wide value; literals come from the text itself.
  if (out.size() > text.size() * 300 + 300) std::abort();
  // '/', NUL and ESC come only from the template's own text: as many as with harmless values.
  std::string plain = t->expand(sprof::traces::TraceVariables{});
  for (char c : {'/', '\0', '\x1b'}) {
    if (std::count(out.begin(), out.end(), c) != std::count(plain.begin(), plain.end(), c)) std::abort();
  }
  return 0;
}
