#pragma once
// Decoders of CPython's line-number tables. Each turns the raw table bytes of a code object
// into a sorted list of breakpoints, so a lookup per sampled frame is one binary search.
//
//   lnotab     (2.7-3.9, co_lnotab): offsets are byte offsets (f_lasti); 2.7 line deltas are
//              unsigned, 3.6+ signed.
//   table_310  (3.10, co_linetable): offsets are bytes (2 * f_lasti).
//   locations  (3.11+, co_linetable location table): offsets are code units of
//              co_code_adaptive ((instr_ptr - code - co_code_adaptive) / 2).

#include <cstdint>
#include <span>
#include <vector>

namespace sprof::pyframes {

enum class LineTableFormat { lnotab_unsigned, lnotab, table_310, locations };

inline constexpr int32_t kNoLine = INT32_MIN;

struct LineBreak {
  uint32_t start;  // first offset this line applies to (in the format's unit)
  int32_t line;    // kNoLine for ranges without a line
};

class LineTable {
 public:
  LineTable() = default;
  static LineTable decode(LineTableFormat format, std::span<const uint8_t> table, int32_t first_line);

  // The line of the instruction at `offset` (format's unit). Negative offsets (a frame that has
  // not started yet) give first_line; offsets without a line give kNoLine.
  int32_t line_at(int64_t offset) const;
  // The offset just past the last range the table describes (0 for lnotab, which has no end).
  uint32_t end() const { return end_; }
  const std::vector<LineBreak>& breaks() const { return breaks_; }

 private:
  std::vector<LineBreak> breaks_;
  int32_t first_line_ = 0;
  uint32_t end_ = 0;
};

}  // namespace sprof::pyframes
