#include "pyframes/code_cache.hpp"

#include <time.h>

#include "pyframes/remote_objects.hpp"

namespace sprof::pyframes {

int64_t coarse_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int32_t CodeRecord::line_at(int64_t offset) const {
  if (memo[0].offset == offset) return memo[0].line;
  if (memo[1].offset == offset) {
    std::swap(memo[0], memo[1]);
    return memo[0].line;
  }
  memo[1] = memo[0];
  memo[0] = {offset, lines.line_at(offset)};
  return memo[0].line;
}

uint32_t CodeCache::intern(const std::string& filename, const std::string& name, int32_t first_line) {
  auto key = std::make_tuple(filename, name, first_line);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(infos_.size());
  infos_.push_back(CodeInfo{id, filename, name, first_line});
  ids_.emplace(std::move(key), id);
  return id;
}

CodeIdentity CodeCache::identity(const uint8_t* header) const {
  return CodeIdentity{load<uint64_t>(header, layout_.co_filename),
                      load<uint64_t>(header, layout_.co_qualname != kAbsent ? layout_.co_qualname : layout_.co_name),
                      load<uint64_t>(header, layout_.co_linetable), load<int32_t>(header, layout_.co_firstlineno)};
}

const CodeRecord* CodeCache::resolve(uint64_t address, const uint8_t* header) {
  const CodeIdentity id = identity(header);

  auto it = records_.find(address);
  if (it != records_.end()) {
    if (it->second.identity == id) return &it->second;
    records_.erase(it);
  }

  ++misses_;
  auto filename = read_str(mem_, id.filename_ptr, layout_.objects);
  auto name = read_str(mem_, id.name_ptr, layout_.objects);
  auto table = read_bytes(mem_, id.linetable_ptr, layout_.objects);
  if (!filename || !name || !table) return nullptr;
  // The header again, now that its strings are read. A frame popped and its code object freed
  // between the frame's read and the header's, and another built at the same address, can leave
  // a header copied halfway through the building, with fields of both (CI saw "odd (even.py:3)");
  // by now they have changed. Such a frame names nothing (the sample is torn), not a mix of two.
  header_again_.resize(layout_.code_read_size);
  if (!mem_.read(address, header_again_.data(), header_again_.size()) || identity(header_again_.data()) != id) {
    return nullptr;
  }

  CodeRecord record;
  record.identity = id;
  if (layout_.co_code_adaptive != kAbsent) {
    record.code_units = load<int64_t>(header, layout_.co_code_units);
  }
  // 3.12 pushes a trampoline frame with a "<shim>" code object under each eval-loop entry; 3.13's
  // CALL_ALLOC_AND_ENTER_INIT pushes _Py_InitCleanup (filename and name "__init__", line 0).
  record.hidden = *filename == "<shim>" || filename->empty() || (id.first_line == 0 && *filename == "__init__");
  record.lines = LineTable::decode(layout_.line_format, *table, id.first_line);
  record.code_id = intern(*filename, *name, id.first_line);

  return &records_.emplace(address, std::move(record)).first->second;
}

}  // namespace sprof::pyframes
