// libFuzzer target for the pstats (marshal) reader. Any input either fails with a bad_input
// error or parses; what parses must write back and re-read to an identical table, and adding
// it through both add paths must agree.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sprof/pstats.hpp"

using namespace sprof::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto table = parse_pstats(bytes, "fuzz-input");
  if (!table.ok()) {
    if (table.error().kind != sprof::ErrorKind::bad_input) std::abort();
    return 0;
  }
  auto written = serialize_pstats(*table);
  if (!written.ok()) std::abort();  // whatever the reader accepts, the writer can write
  auto again = parse_pstats(*written, "fuzz-rewritten");
  if (!again.ok() || !identical(*table, *again)) std::abort();

  StatsTable by_table = *table;
  by_table.add(*again);
  StatsTable by_bytes = *table;
  if (!by_bytes.add_bytes(*written, "fuzz-rewritten").ok()) std::abort();
  if (!identical(by_table, by_bytes)) std::abort();
  if (by_table.size() != table->size()) std::abort();
  return 0;
}
