// Pure parsers of the pyframes reader: /proc text, version strings, str decoding, ELF symbols
// and sections of the real interpreters installed here, _Py_DebugOffsets.

#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "pyframes/elf_file.hpp"
#include "pyframes/layout.hpp"
#include "pyframes/proc_maps.hpp"
#include "pyframes/proc_tasks.hpp"
#include "pyframes/remote_objects.hpp"
#include "pyframes/runtime_finder.hpp"

namespace fs = std::filesystem;
using namespace sprof::pyframes;

TEST_CASE("maps lines parse, odd lines are skipped", "[pyframes]") {
  auto maps = parse_maps(
      "00400000-00422000 r--p 00000000 fd:01 1234   /usr/bin/python3.11\n"
      "7f00aa000000-7f00aa021000 rw-p 00000000 00:00 0 \n"
      "garbage line\n"
      "7ffd1000-7ffd2000 r-xp 0001f000 08:02 99  /opt/my dir/libpython3.13.so.1.0 (deleted)");
  REQUIRE(maps.size() == 3);
  CHECK(maps[0].start == 0x400000);
  CHECK(maps[0].end == 0x422000);
  CHECK(maps[0].readable);
  CHECK_FALSE(maps[0].writable);
  CHECK(maps[0].path == "/usr/bin/python3.11");
  CHECK(maps[1].path.empty());
  CHECK(maps[2].executable);
  CHECK(maps[2].offset == 0x1f000);
  CHECK(maps[2].path == "/opt/my dir/libpython3.13.so.1.0 (deleted)");
}

TEST_CASE("stat state letter comes after the last parenthesis", "[pyframes]") {
  CHECK(stat_state("1234 (python3) S 1 2 3") == 'S');
  CHECK(stat_state("1234 (a) b) R 1 2 3") == 'R');  // a thread name may contain ") "
  CHECK(stat_state("1234 (cut") == 0);
}

TEST_CASE("version strings and file names", "[pyframes]") {
  std::string bss = std::string("\0\0junk 1.2.3 3.9 ", 17) + "3.9.18 (main, Jan  1 2024, 00:00:00) [GCC 12]";
  auto v = scan_version_string({reinterpret_cast<const uint8_t*>(bss.data()), bss.size()});
  REQUIRE(v);
  CHECK(v->str() == "3.9.18");
  std::string rc = "3.13.0rc2+ (heads/3.13:abc, ...)";
  v = scan_version_string({reinterpret_cast<const uint8_t*>(rc.data()), rc.size()});
  REQUIRE(v);
  CHECK(v->str() == "3.13.0");
  std::string none = "version 10.3.1 (x) and 3.10 (y)";
  CHECK_FALSE(scan_version_string({reinterpret_cast<const uint8_t*>(none.data()), none.size()}));

  auto f = version_from_file_name("/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0");
  REQUIRE(f);
  CHECK((f->major == 3 && f->minor == 10));
  f = version_from_file_name("/root/.pyenv/versions/3.7.16/lib/libpython3.7m.so.1.0");
  REQUIRE(f);
  CHECK(f->minor == 7);
  CHECK(version_from_file_name("/usr/bin/python3.11")->minor == 11);
  CHECK_FALSE(version_from_file_name("/usr/bin/python3"));
  CHECK_FALSE(version_from_file_name("/usr/bin/pythonista"));
}

TEST_CASE("compact str characters decode to UTF-8", "[pyframes]") {
  std::vector<uint8_t> latin1 = {'t', 0xE9};  // "té"
  CHECK(ucs_to_utf8(latin1, 1) == "t\xC3\xA9");
  std::vector<uint8_t> ucs2 = {0xC3, 0x03};  // U+03C3 sigma
  CHECK(ucs_to_utf8(ucs2, 2) == "\xCF\x83");
  std::vector<uint8_t> ucs4 = {0x00, 0x00, 0x02, 0x00};  // U+20000
  CHECK(ucs_to_utf8(ucs4, 4) == "\xF0\xA0\x80\x80");
  std::vector<uint8_t> bad = {0x00, 0xD8, 0x00, 0x00};  // lone surrogate
  CHECK(ucs_to_utf8(bad, 4) == "\xEF\xBF\xBD");
  CHECK(ucs_to_utf8(latin1, 3).empty());
}

TEST_CASE("ELF symbols and sections of Debian's stripped static python3.11", "[pyframes][elf]") {
  const char* path = "/usr/bin/python3.11";
  if (!fs::exists(path)) {
    WARN("skipped: no " << path);
    return;
  }
  auto elf = ElfFile::open(path, path);
  REQUIRE(elf.ok());
  CHECK((*elf)->is_executable_type());
  auto runtime = (*elf)->symbol("_PyRuntime");
  auto section = (*elf)->section(".PyRuntime");
  REQUIRE(runtime);
  REQUIRE(section);
  // Two independent ways to find the runtime agree (the section starts at the symbol).
  CHECK(*runtime == section->address);
  CHECK((*elf)->symbol("Py_Version"));
  CHECK((*elf)->symbol("PyCode_Type"));
  CHECK_FALSE((*elf)->symbol("no_such_symbol_anywhere"));
}

TEST_CASE("ELF reader refuses what is not an ELF file", "[pyframes][elf]") {
  std::vector<uint8_t> junk(100, 0x41);
  auto r = ElfFile::parse(junk, "junk");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("junk") != std::string::npos);
  std::vector<uint8_t> empty;
  CHECK_FALSE(ElfFile::parse(empty, "empty").ok());
}

namespace {

std::vector<uint8_t> debug_offsets_of(const std::string& lib) {
  auto elf = ElfFile::open(lib, lib);
  if (!elf.ok()) return {};
  auto section = (*elf)->section(".PyRuntime");
  if (!section) return {};
  auto bytes = (*elf)->bytes_at_address(section->address, kDebugOffsetsSize313);
  return {bytes.begin(), bytes.end()};
}

}  // namespace

TEST_CASE("_Py_DebugOffsets of the installed 3.13 give a consistent layout", "[pyframes]") {
  std::string lib = "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0";
  if (!fs::exists(lib)) {
    WARN("skipped: no CPython 3.13 shared library here");
    return;
  }
  std::vector<uint8_t> block = debug_offsets_of(lib);
  REQUIRE(block.size() == kDebugOffsetsSize313);
  auto layout = layout_from_debug_offsets(block);
  REQUIRE(layout.ok());
  CHECK(layout->minor == 13);
  CHECK(layout->frame_model == FrameModel::current_frame);
  CHECK(layout->co_qualname < layout->code_read_size);
  CHECK(layout->ts_current_frame < layout->ts_size);

  SECTION("a free-threaded build is refused") {
    block[16] = 1;
    auto r = layout_from_debug_offsets(block);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == sprof::ErrorKind::unsupported);
  }
  SECTION("a block whose offsets do not fit the 3.13 shape is refused") {
    block[6 * 8] = 8;  // interpreter_state.size far smaller than its offsets
    block[6 * 8 + 1] = 0;
    block[6 * 8 + 2] = 0;
    CHECK_FALSE(layout_from_debug_offsets(block).ok());
  }
  SECTION("no cookie") {
    block[0] = 'X';
    CHECK_FALSE(layout_from_debug_offsets(block).ok());
  }
}

TEST_CASE("fixed layouts exist for 2.7 and 3.6-3.12 only", "[pyframes]") {
  for (int minor = 6; minor <= 12; ++minor) CHECK(static_layout(3, minor).has_value());
  CHECK(static_layout(2, 7).has_value());
  CHECK_FALSE(static_layout(3, 5).has_value());
  CHECK_FALSE(static_layout(3, 13).has_value());  // 3.13+: from _Py_DebugOffsets
  CHECK_FALSE(static_layout(2, 6).has_value());
}
