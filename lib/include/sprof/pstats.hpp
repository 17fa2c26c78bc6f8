#pragma once
// Python's pstats files (what cProfile's dump_stats and pstats.Stats.dump_stats
// write): marshal.dumps of {(file, line, name): (cc, nc, tt, ct, callers)}.
// Reader, writer and pstats.Stats.add-identical aggregation.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sprof/result.hpp"

namespace sprof::store {

// cProfile's function label: (co_filename, co_firstlineno, co_name); built-ins are ("~", 0, name).
struct FunctionKey {
  std::string file;
  int64_t line = 0;
  std::string name;

  bool operator==(const FunctionKey&) const = default;
  auto operator<=>(const FunctionKey&) const = default;
};

struct FunctionKeyHash {
  size_t operator()(const FunctionKey& key) const noexcept;
};

// One entry of a function's callers dict. cProfile writes the tuple (nc, cc, tt, ct) — nc first;
// the older `profile` module writes a plain int call count (is_count = true, only nc used).
struct CallerStats {
  bool is_count = false;
  int64_t nc = 0;
  int64_t cc = 0;
  double tt = 0.0;
  double ct = 0.0;
};

struct FunctionStats {
  int64_t cc = 0;  // primitive (non-recursive) calls
  int64_t nc = 0;  // total calls
  double tt = 0.0; // self time, seconds
  double ct = 0.0; // cumulative time, seconds
  // Insertion order kept (as Python dicts do), so output order can match pstats exactly.
  std::vector<std::pair<FunctionKey, CallerStats>> callers;
};

// A loaded stats dict. Entries keep the order of the file (Python dict order).
class StatsTable {
 public:
  using Entry = std::pair<FunctionKey, FunctionStats>;

  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  // Find or create the entry for key (new keys go to the end, as in a Python dict).
  FunctionStats& operator[](const FunctionKey& key);
  const FunctionStats* find(const FunctionKey& key) const;

  // pstats.Stats.add: counts and times summed per function, callers merged with add_callers.
  void add(const StatsTable& other);

  // Totals as pstats computes them: total_calls, prim_calls, total_tt (sum of tt).
  int64_t total_calls() const;
  int64_t primitive_calls() const;
  double total_tt() const;

 private:
  std::vector<Entry> entries_;
  std::unordered_map<FunctionKey, size_t, FunctionKeyHash> index_;
};

// Parse marshal bytes. `source` names the file in error messages. Rejects what pstats would
// reject (non-dict top level, malformed keys/values) and marshal types pstats never writes.
Result<StatsTable> parse_pstats(std::string_view bytes, const std::string& source);
Result<StatsTable> read_pstats(const std::filesystem::path& path);

// marshal bytes that pstats.Stats() and `python3 -m pstats` load. An empty table is an error
// (pstats.Stats raises TypeError on an empty dict).
Result<std::string> serialize_pstats(const StatsTable& table);
Status write_pstats(const std::filesystem::path& path, const StatsTable& table);

}  // namespace sprof::store
