#include "pyframes/elf_file.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sprof::pyframes {
namespace {

template <class T>
bool read_struct(const uint8_t* data, size_t size, uint64_t offset, T& out) {
  if (offset > size || size - offset < sizeof(T)) return false;
  std::memcpy(&out, data + offset, sizeof(T));
  return true;
}

std::string_view string_at(const uint8_t* data, size_t size, uint64_t table_offset,
                           uint64_t table_size, uint64_t index) {
  if (table_offset > size || table_size > size - table_offset || index >= table_size) return {};
  const char* start = reinterpret_cast<const char*>(data + table_offset + index);
  size_t max = table_size - index;
  size_t len = strnlen(start, max);
  if (len == max) return {};  // unterminated
  return {start, len};
}

}  // namespace

ElfFile::~ElfFile() {
  if (mapped_ && data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

Result<std::shared_ptr<const ElfFile>> ElfFile::open(const std::string& path,
                                                     const std::string& display_name) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return make_error(err == EACCES || err == EPERM ? ErrorKind::permission : ErrorKind::io,
                      "cannot open {}: {}", display_name, std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    return make_error(ErrorKind::io, "cannot read {}: empty or not a regular file", display_name);
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    return make_error(ErrorKind::io, "cannot map {}: {}", display_name, std::strerror(errno));
  }
  std::shared_ptr<ElfFile> elf(new ElfFile());
  elf->name_ = display_name;
  elf->data_ = static_cast<const uint8_t*>(map);
  elf->size_ = static_cast<size_t>(st.st_size);
  elf->mapped_ = true;
  SPROF_TRY_STATUS(elf->load());
  return std::shared_ptr<const ElfFile>(std::move(elf));
}

Result<std::shared_ptr<const ElfFile>> ElfFile::parse(std::span<const uint8_t> bytes,
                                                      const std::string& display_name) {
  std::shared_ptr<ElfFile> elf(new ElfFile());
  elf->name_ = display_name;
  elf->owned_ = std::make_unique<uint8_t[]>(bytes.size() + 1);
  if (!bytes.empty()) std::memcpy(elf->owned_.get(), bytes.data(), bytes.size());
  elf->data_ = elf->owned_.get();
  elf->size_ = bytes.size();
  SPROF_TRY_STATUS(elf->load());
  return std::shared_ptr<const ElfFile>(std::move(elf));
}

Status ElfFile::load() {
  Elf64_Ehdr eh{};
  if (!read_struct(data_, size_, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return make_error(ErrorKind::not_python, "{} is not an ELF file", name_);
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != EM_X86_64) {
    return make_error(ErrorKind::unsupported, "{} is not an x86-64 ELF file (only x86-64 Linux is supported)",
                      name_);
  }
  type_ = eh.e_type;

  // Program headers: the PT_LOAD segments give file-offset <-> address translation.
  bool have_base = false;
  if (eh.e_phentsize == sizeof(Elf64_Phdr)) {
    for (uint16_t i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph{};
      if (!read_struct(data_, size_, eh.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr), ph)) break;
      if (ph.p_type != PT_LOAD) continue;
      loads_.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
      if (ph.p_offset == 0 && !have_base) {
        base_vaddr_ = ph.p_vaddr & ~uint64_t{0xfff};
        have_base = true;
      }
    }
  }
  if (!have_base && !loads_.empty()) {
    // No segment maps offset 0: derive the address of offset 0 from the first segment.
    base_vaddr_ = (loads_[0].vaddr - loads_[0].offset) & ~uint64_t{0xfff};
  }

  // Section headers and their names.
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) return {};
  std::vector<Elf64_Shdr> headers;
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh{};
    if (!read_struct(data_, size_, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), sh)) break;
    headers.push_back(sh);
  }
  const Elf64_Shdr* names = eh.e_shstrndx < headers.size() ? &headers[eh.e_shstrndx] : nullptr;
  for (const Elf64_Shdr& sh : headers) {
    ElfSection section;
    if (names != nullptr) {
      section.name = std::string(string_at(data_, size_, names->sh_offset, names->sh_size, sh.sh_name));
    }
    section.type = sh.sh_type;
    section.address = sh.sh_addr;
    section.offset = sh.sh_offset;
    section.size = sh.sh_size;
    sections_.push_back(std::move(section));
    raw_sections_.push_back({sh.sh_type, sh.sh_link, sh.sh_offset, sh.sh_size, sh.sh_entsize});
  }
  return {};
}

std::optional<uint64_t> ElfFile::search_symbols(uint32_t table_type, std::string_view name) const {
  for (const RawSection& table : raw_sections_) {
    if (table.type != table_type || table.entsize != sizeof(Elf64_Sym)) continue;
    if (table.link >= raw_sections_.size()) continue;
    const RawSection& strings = raw_sections_[table.link];
    if (table.offset > size_ || table.size > size_ - table.offset) continue;
    uint64_t count = table.size / sizeof(Elf64_Sym);
    for (uint64_t i = 1; i < count; ++i) {
      Elf64_Sym sym{};
      if (!read_struct(data_, size_, table.offset + i * sizeof(Elf64_Sym), sym)) break;
      if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      if (string_at(data_, size_, strings.offset, strings.size, sym.st_name) == name) {
        return sym.st_value;
      }
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::symbol(std::string_view name) const {
  if (auto value = search_symbols(SHT_DYNSYM, name)) return value;
  return search_symbols(SHT_SYMTAB, name);
}

std::optional<ElfSection> ElfFile::section(std::string_view name) const {
  for (const ElfSection& section : sections_) {
    if (section.name == name) return section;
  }
  return std::nullopt;
}

std::span<const uint8_t> ElfFile::bytes_at_address(uint64_t address, uint64_t size) const {
  for (const Segment& seg : loads_) {
    if (address < seg.vaddr || address - seg.vaddr > seg.filesz) continue;
    uint64_t within = address - seg.vaddr;
    if (size > seg.filesz - within) continue;
    uint64_t offset = seg.offset + within;
    if (offset > size_ || size > size_ - offset) return {};
    return {data_ + offset, size};
  }
  return {};
}

}  // namespace sprof::pyframes
