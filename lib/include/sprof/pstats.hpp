#pragma once
// Python's pstats files (what cProfile's dump_stats and pstats.Stats.dump_stats
// write): marshal.dumps of {(file, line, name): (cc, nc, tt, ct, callers)}.
// Reader, writer and pstats.Stats.add-identical aggregation.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

// cProfile's function label: (co_filename, co_firstlineno, co_name); built-ins are ("~", 0, name).
// Strings are UTF-8 (lone surrogates kept as CPython's "surrogatepass" encodes them).
struct FunctionKey {
  std::string file;
  int64_t line = 0;
  std::string name;

  bool operator==(const FunctionKey&) const = default;
  auto operator<=>(const FunctionKey&) const = default;
};

// The one entry, all counts zero, of the table sprof record writes for an interval without a
// kept sample ("~", 0, "<sprof: no samples>"): its python_stats stays loadable (pstats refuses an
// empty dict), so every interval has all three files. sprof's own tables leave it out.
const FunctionKey& no_samples_function();

struct FunctionKeyHash {
  size_t operator()(const FunctionKey& key) const noexcept;
};

// The hash FunctionKeyHash returns, from the parts (the reader hashes keys it has not copied yet).
uint64_t hash_function_key(std::string_view file, int64_t line, std::string_view name) noexcept;

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

namespace detail {

// Open-addressing map from a 64-bit key hash to a position in some vector; the owner compares
// the keys at candidate positions (several keys may share a hash).
class HashSlots {
 public:
  static constexpr uint32_t npos = UINT32_MAX;

  void clear() { slots_.clear(); count_ = 0; }
  // Empty, sized for `expected` keys, reusing the memory it has.
  void reset(size_t expected);
  size_t size() const { return count_; }
  void reserve(size_t n);
  // The position whose key `equal(position)` accepts among those stored under `hash`, or npos.
  template <class Equal>
  uint32_t find(uint64_t hash, Equal&& equal) const {
    if (slots_.empty()) return npos;
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.position == npos) return npos;
      if (slot.hash == hash && equal(slot.position)) return slot.position;
    }
  }
  // Store `position` under `hash` (the caller has checked that its key is not there yet).
  // Inline: the reader and the merge insert millions of keys.
  void insert(uint64_t hash, uint32_t position) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].position != npos) i = (i + 1) & mask;
    slots_[i] = Slot{hash, position};
    ++count_;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t position = npos;
  };
  void rehash(size_t capacity);
  void grow();
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  size_t count_ = 0;
};

// Per-function lookup of callers, built when StatsTable::add first merges into the function.
struct CallerIndex {
  bool valid = false;
  std::vector<uint64_t> hashes;  // hash of each callers[i].first
  HashSlots slots;               // used once the callers list is long
};

}  // namespace detail

struct ParsedStats;  // lib/src/store/pstats_view.hpp
class StatsTable;

// A pstats file read and checked but not yet added to a table: its keys still point into the
// file's bytes, each hashed once. Files can be read this way on several threads and then added
// to one table in order, which costs less than read_pstats + add.
class ParsedPstats {
 public:
  ParsedPstats();
  ~ParsedPstats();
  ParsedPstats(ParsedPstats&&) noexcept;
  ParsedPstats& operator=(ParsedPstats&&) noexcept;

  size_t size() const;  // functions in the file

 private:
  friend class StatsTable;
  friend class FunctionKeyCache;
  friend class PooledStatsTable;
  friend Result<ParsedPstats> parse_pstats_owned(std::string bytes, const std::string& source);
  friend Status read_pstats_into(const std::filesystem::path& path, ParsedPstats& into, const ProfileFiles& files);
  struct Data;
  std::unique_ptr<Data> data_;
};

// Takes the bytes (the result refers into them). Errors as parse_pstats.
Result<ParsedPstats> parse_pstats_owned(std::string bytes, const std::string& source);
Result<ParsedPstats> read_pstats_parsed(const std::filesystem::path& path, const ProfileFiles& files = local_files());
// The same into `into`, reusing its buffers: reading thousands of files through a few of them
// allocates nothing per file. On error `into` holds nothing.
Status read_pstats_into(const std::filesystem::path& path, ParsedPstats& into, const ProfileFiles& files = local_files());

// Numbers the distinct function keys of files parsed on any number of threads, so that adding
// them to one table in order (PooledStatsTable) compares numbers instead of strings: the string
// comparisons happen on the parsing threads (FunctionKeyCache), off the one thread that adds.
class FunctionKeyPool {
 public:
  FunctionKeyPool();
  ~FunctionKeyPool();
  FunctionKeyPool(const FunctionKeyPool&) = delete;
  FunctionKeyPool& operator=(const FunctionKeyPool&) = delete;

  size_t size() const;

 private:
  friend class FunctionKeyCache;
  friend class PooledStatsTable;
  struct Data;
  std::unique_ptr<Data> data_;
};

// One thread's way into a pool: a key it has numbered once it finds again without the pool's
// lock. Used by one thread at a time; the pool outlives it.
class FunctionKeyCache {
 public:
  explicit FunctionKeyCache(FunctionKeyPool& pool);
  ~FunctionKeyCache();
  FunctionKeyCache(const FunctionKeyCache&) = delete;
  FunctionKeyCache& operator=(const FunctionKeyCache&) = delete;

  // Give every key of `parsed` (its functions' and their callers') its number in the pool.
  void number_keys(ParsedPstats& parsed);

 private:
  struct Data;
  std::unique_ptr<Data> data_;
};

// A table added up from parsed files whose keys a cache of `pool` numbered: add() does what
// StatsTable::add(const ParsedPstats&) does, in the same float order, but finds functions and
// callers by number; table() is then bit for bit the StatsTable those adds would have built.
class PooledStatsTable {
 public:
  explicit PooledStatsTable(const FunctionKeyPool& pool);
  ~PooledStatsTable();

  // Throws std::logic_error for a file not numbered by a cache of this table's pool (a bug).
  void add(const ParsedPstats& parsed);
  StatsTable table() const;

 private:
  struct Data;
  std::unique_ptr<Data> data_;
};

// A loaded stats dict. Entries keep the order of the file (Python dict order).
class StatsTable {
 public:
  using Entry = std::pair<FunctionKey, FunctionStats>;

  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void reserve(size_t n);

  // Find or create the entry for key (new keys go to the end, as in a Python dict).
  // The reference is valid until the next call that adds entries (add, add_bytes, operator[]).
  FunctionStats& operator[](const FunctionKey& key);
  const FunctionStats* find(const FunctionKey& key) const;

  // pstats.Stats.add: counts and times summed per function, callers merged with add_callers.
  // Python raises TypeError where one side has a tuple for a caller and the other an int; here
  // the int n counts as (n, n, 0.0, 0.0). Counts saturate at the int64 limits instead of growing.
  void add(const StatsTable& other);
  // add(parse_pstats(bytes, source)) without building the intermediate table: the fast path
  // for aggregating many files (keys are hashed once and copied only when new; about 2.5x
  // faster than read_pstats + add). On error the table is unchanged.
  Status add_bytes(std::string_view bytes, const std::string& source);
  Status add_file(const std::filesystem::path& path, const ProfileFiles& files = local_files());
  // The same for a file parsed beforehand (possibly on another thread).
  void add(const ParsedPstats& parsed);

  // Totals as pstats computes them: total_calls, prim_calls, total_tt (sum of tt). total_tt
  // follows pstats' own float arithmetic: the sum over the file in file order, and on add the
  // running total plus the other table's total (not a re-summation of the merged entries).
  int64_t total_calls() const;
  int64_t primitive_calls() const;
  double total_tt() const;

 private:
  friend struct StatsTableAccess;  // the reader and writer (lib/src/store)

  uint32_t find_position(const FunctionKey& key, uint64_t hash) const;
  uint32_t append(FunctionKey key, uint64_t hash);
  detail::CallerIndex& caller_index(uint32_t position);

  std::vector<Entry> entries_;
  std::vector<uint64_t> hashes_;  // hash_function_key of entries_[i].first
  detail::HashSlots index_;
  std::vector<detail::CallerIndex> caller_index_;  // parallel to entries_
  double total_tt_ = 0.0;
  bool total_tt_tracked_ = false;  // false: total_tt() sums the entries
};

// Same functions in the same order with the same callers in the same order, counts equal and
// times bit-for-bit identical (so NaN equals itself and 0.0 differs from -0.0).
bool identical(const StatsTable& a, const StatsTable& b);

// Parse marshal bytes. `source` names the file in error messages. Rejects what pstats would
// reject (non-dict top level, malformed keys/values) and marshal types pstats never writes.
Result<StatsTable> parse_pstats(std::string_view bytes, const std::string& source);
Result<StatsTable> read_pstats(const std::filesystem::path& path, const ProfileFiles& files = local_files());

// marshal bytes that pstats.Stats() and `python3 -m pstats` load. An empty table is an error
// (pstats.Stats raises TypeError on an empty dict).
Result<std::string> serialize_pstats(const StatsTable& table);
Status write_pstats(const std::filesystem::path& path, const StatsTable& table);

}  // namespace sprof::store
