#pragma once
// A minimal, bounds-checked reader of 64-bit little-endian ELF files: symbols (.dynsym and
// .symtab), sections and the load segments. The file is mapped read-only.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::pyframes {

struct ElfSection {
  std::string name;
  uint32_t type = 0;     // SHT_*
  uint64_t address = 0;  // sh_addr (link-time virtual address)
  uint64_t offset = 0;   // sh_offset (0 meaningless for SHT_NOBITS)
  uint64_t size = 0;
};

class ElfFile {
 public:
  // `path` is what is opened (for example /proc/PID/root/usr/lib/libpython3.so);
  // `display_name` is what error messages show.
  static Result<std::shared_ptr<const ElfFile>> open(const std::string& path,
                                                     const std::string& display_name);
  // Parses an in-memory image (tests and fuzzing); the bytes are copied.
  static Result<std::shared_ptr<const ElfFile>> parse(std::span<const uint8_t> bytes,
                                                      const std::string& display_name);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& name() const { return name_; }
  bool is_executable_type() const { return type_ == 2; }  // ET_EXEC: not position independent

  // Value (link-time address) of a defined symbol; .dynsym is searched first, then .symtab.
  std::optional<uint64_t> symbol(std::string_view name) const;
  std::optional<ElfSection> section(std::string_view name) const;
  // The link-time address that file offset 0 is loaded at (PT_LOAD with p_offset 0,
  // page-aligned): load bias = mapping start of offset 0 - this.
  uint64_t base_vaddr() const { return base_vaddr_; }
  // Bytes of the file backing a link-time address range, when the range is file-backed
  // (PROGBITS in a PT_LOAD segment); empty otherwise.
  std::span<const uint8_t> bytes_at_address(uint64_t address, uint64_t size) const;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  ElfFile() = default;
  Status load();
  std::optional<uint64_t> search_symbols(uint32_t table_type, std::string_view name) const;

  std::string name_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::unique_ptr<uint8_t[]> owned_;
  uint16_t type_ = 0;
  uint64_t base_vaddr_ = 0;
  struct Segment {
    uint64_t vaddr, offset, filesz;
  };
  std::vector<Segment> loads_;
  std::vector<ElfSection> sections_;
  struct RawSection {
    uint32_t type, link;
    uint64_t offset, size, entsize;
  };
  std::vector<RawSection> raw_sections_;
};

}  // namespace sprof::pyframes
