#pragma once
// A parsed pstats dict that has not been copied out of the input yet: keys are string_views
// into the file's bytes (or into owned_strings where marshal's Latin-1 strings needed
// re-encoding), each key hashed once. StatsTable builds itself from it or adds it in.

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/pstats.hpp"

namespace sprof::store {

struct KeyView {
  std::string_view file;
  std::string_view name;
  int64_t line = 0;
  uint64_t hash = 0;  // hash_function_key(file, line, name)

  bool equals(const FunctionKey& key) const {
    return line == key.line && name == key.name && file == key.file;
  }
  bool equals(const KeyView& other) const {
    return hash == other.hash && line == other.line && name == other.name && file == other.file;
  }
  FunctionKey materialize() const { return FunctionKey{std::string(file), line, std::string(name)}; }
};

struct CallerView {
  KeyView key;
  CallerStats stats;
};

struct FunctionView {
  KeyView key;
  int64_t cc = 0;
  int64_t nc = 0;
  double tt = 0.0;
  double ct = 0.0;
  uint32_t callers_begin = 0;  // range in ParsedStats::callers (shared when the file shares
  uint32_t callers_count = 0;  // one callers dict between functions through a back-reference)
};

struct ParsedStats {
  std::vector<FunctionView> functions;  // dict order, duplicate keys merged as Python does
  std::vector<CallerView> callers;
  std::deque<std::string> owned_strings;  // stable addresses for the string_views above
  double total_tt = 0.0;                  // pstats' get_top_level_stats sum, in dict order
  // Filled by FunctionKeyCache::number_keys: each key's number in `numbered_by`.
  std::vector<uint32_t> function_ids;  // parallel to functions
  std::vector<uint32_t> caller_ids;    // parallel to callers
  const FunctionKeyPool* numbered_by = nullptr;

  void clear() {
    functions.clear();
    callers.clear();
    owned_strings.clear();
    total_tt = 0.0;
    function_ids.clear();
    caller_ids.clear();
    numbered_by = nullptr;
  }
};

struct ParsedPstats::Data {
  std::string bytes;  // never moves: Data lives on the heap
  ParsedStats parsed;
};

// Parse `bytes` (all of them: trailing data is an error) into `out`. Throws nothing; on error
// returns an Error naming `source` and the byte offset.
Status parse_pstats_view(std::string_view bytes, const std::string& source, ParsedStats& out);

// StatsTable internals used by the reader.
struct StatsTableAccess {
  // Add a parsed dict as pstats.Stats.add does; with `fresh` (the table is empty and is being
  // loaded, as pstats.Stats(path) loads) values are copied without any arithmetic.
  static void merge(StatsTable& table, const ParsedStats& parsed, bool fresh);
  // Make `table` hold `entries` (distinct keys) with pstats' running total `total_tt`.
  static void assign(StatsTable& table, std::vector<StatsTable::Entry> entries, double total_tt);
};

}  // namespace sprof::store
