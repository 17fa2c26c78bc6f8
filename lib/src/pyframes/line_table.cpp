#include "pyframes/line_table.hpp"

#include <algorithm>
#include <cstdint>

namespace sprof::pyframes {
namespace {

void push(std::vector<LineBreak>& breaks, uint32_t start, int32_t line) {
  // A later entry at the same offset replaces an earlier one (zero-length ranges only move
  // the running line).
  if (!breaks.empty() && breaks.back().start == start) {
    breaks.back().line = line;
  } else {
    breaks.push_back({start, line});
  }
}

// Line tables come from another process's memory: every value is hostile. A running line that
// would leave int32 ends the decoding (the table is malformed) instead of overflowing.
bool add_line(int32_t& line, int64_t delta) {
  int64_t sum = int64_t{line} + delta;
  if (sum < INT32_MIN || sum > INT32_MAX) return false;
  line = static_cast<int32_t>(sum);
  return true;
}

void decode_lnotab(std::span<const uint8_t> t, int32_t first_line, bool is_signed,
                   std::vector<LineBreak>& breaks) {
  // CPython's PyCode_Addr2Line: addr += addr_incr; if addr > A stop; line += line_incr.
  uint32_t addr = 0;
  int32_t line = first_line;
  breaks.push_back({0, line});
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    addr += t[i];
    if (!add_line(line, is_signed ? static_cast<int8_t>(t[i + 1]) : static_cast<int32_t>(t[i + 1]))) break;
    push(breaks, addr, line);
  }
}

uint32_t decode_310(std::span<const uint8_t> t, int32_t first_line, std::vector<LineBreak>& breaks) {
  uint32_t end = 0;
  int32_t computed = first_line;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    uint32_t start = end;
    end += t[i];
    int8_t delta = static_cast<int8_t>(t[i + 1]);
    int32_t line = kNoLine;
    if (delta != -128) {
      if (!add_line(computed, delta)) break;
      line = computed;
    }
    push(breaks, start, line);
  }
  push(breaks, end, kNoLine);
  return end;
}

struct Cursor {
  std::span<const uint8_t> t;
  size_t i = 0;
  bool ok = true;
  uint32_t byte() {
    if (i >= t.size()) {
      ok = false;
      return 0;
    }
    return t[i++];
  }
  uint32_t uvarint() {
    uint32_t read = byte();
    uint32_t value = read & 63;
    uint32_t shift = 0;
    while ((read & 64) != 0 && ok) {
      read = byte();
      shift += 6;
      if (shift > 30) {
        ok = false;
        break;
      }
      value |= (read & 63) << shift;
    }
    return value;
  }
  int32_t svarint() {
    uint32_t v = uvarint();
    return (v & 1) != 0 ? -static_cast<int32_t>(v >> 1) : static_cast<int32_t>(v >> 1);
  }
};

uint32_t decode_locations(std::span<const uint8_t> t, int32_t first_line,
                          std::vector<LineBreak>& breaks) {
  Cursor c{t};
  uint32_t unit = 0;
  int32_t computed = first_line;
  while (c.i < t.size()) {
    uint32_t first = c.byte();
    if ((first & 0x80) == 0) break;  // not at an entry start: malformed, stop here
    uint32_t code = (first >> 3) & 15;
    uint32_t length = (first & 7) + 1;
    int32_t line = kNoLine;
    if (code == 15) {
      // no location
    } else if (code == 14 || code == 13) {
      if (!add_line(computed, c.svarint())) break;
      line = computed;
    } else if (code >= 10) {
      if (!add_line(computed, static_cast<int32_t>(code) - 10)) break;
      line = computed;
    } else {
      line = computed;
    }
    if (!c.ok) break;
    push(breaks, unit, line);
    unit += length;
    // Column data (and the long form's end line) never has bit 7 set: skip to the next entry.
    while (c.i < t.size() && (t[c.i] & 0x80) == 0) ++c.i;
  }
  push(breaks, unit, kNoLine);
  return unit;
}

}  // namespace

LineTable LineTable::decode(LineTableFormat format, std::span<const uint8_t> table, int32_t first_line) {
  LineTable out;
  out.first_line_ = first_line;
  switch (format) {
    case LineTableFormat::lnotab_unsigned:
      decode_lnotab(table, first_line, false, out.breaks_);
      break;
    case LineTableFormat::lnotab:
      decode_lnotab(table, first_line, true, out.breaks_);
      break;
    case LineTableFormat::table_310:
      out.end_ = decode_310(table, first_line, out.breaks_);
      break;
    case LineTableFormat::locations:
      out.end_ = decode_locations(table, first_line, out.breaks_);
      break;
  }
  return out;
}

int32_t LineTable::line_at(int64_t offset) const {
  if (offset < 0) return first_line_;
  if (breaks_.empty()) return kNoLine;
  if (offset > UINT32_MAX) return kNoLine;
  auto it = std::upper_bound(breaks_.begin(), breaks_.end(), static_cast<uint32_t>(offset),
                             [](uint32_t value, const LineBreak& b) { return value < b.start; });
  if (it == breaks_.begin()) return kNoLine;
  return std::prev(it)->line;
}

}  // namespace sprof::pyframes
