// libFuzzer target for pyframes' readers of untrusted bytes: ELF files (the target's binaries),
// line tables, _Py_DebugOffsets blocks and version strings (the target's memory), maps text.
// The first byte picks the reader.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "pyframes/elf_file.hpp"
#include "pyframes/layout.hpp"
#include "pyframes/line_table.hpp"
#include "pyframes/proc_maps.hpp"
#include "pyframes/proc_tasks.hpp"
#include "pyframes/runtime_finder.hpp"

using namespace sprof::pyframes;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const uint8_t> bytes(data + 1, size - 1);
  switch (data[0] % 6) {
    case 0: {
      auto elf = ElfFile::parse(bytes, "fuzz");
      if (elf.ok()) {
        (void)(*elf)->symbol("_PyRuntime");
        (void)(*elf)->section(".PyRuntime");
        (void)(*elf)->bytes_at_address(0x1000, 64);
      }
      break;
    }
    case 1:
    case 2: {
      auto format = data[0] % 6 == 1 ? LineTableFormat::locations : LineTableFormat::table_310;
      LineTable t = LineTable::decode(format, bytes, 10);
      for (int64_t offset = -2; offset < 64; ++offset) (void)t.line_at(offset);
      (void)LineTable::decode(LineTableFormat::lnotab, bytes, 1).line_at(static_cast<int64_t>(size));
      break;
    }
    case 3:
      (void)layout_from_debug_offsets(bytes);
      break;
    case 4:
      (void)scan_version_string(bytes);
      break;
    case 5: {
      std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      (void)parse_maps(text);
      (void)stat_state(text);
      break;
    }
  }
  return 0;
}
