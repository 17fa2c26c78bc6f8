// StatsTable: a pstats dict in insertion order with a hash index, and pstats.Stats.add.
//
// pstats (Lib/pstats.py) adds a loaded dict `item` into `self.stats` as
//   for func, stat in item.stats.items():
//       old = self.stats.get(func, (0, 0, 0, 0, {}))
//       self.stats[func] = add_func_stats(old, stat)   # source + target, elementwise
// and add_callers copies the target's callers, then for each source caller sums tuples
// elementwise (source + target) or adds ints, appending callers not seen before. Python's
// float addition is commutative, so the sums here are bit-identical; new keys go to the end.

#include <bit>
#include <cstring>

#include "sprof/pstats.hpp"
#include "store/codecs/key_hash.hpp"
#include "store/pstats/pstats_view.hpp"
#include "store/pstats/stats_arithmetic.hpp"

namespace sprof::store {

uint64_t hash_function_key(std::string_view file, int64_t line, std::string_view name) noexcept {
  return combine_key_hash(hash_text(file), line, hash_text(name));
}

const FunctionKey& no_samples_function() {
  static const FunctionKey key{"~", 0, "<sprof: no samples>"};
  return key;
}

size_t FunctionKeyHash::operator()(const FunctionKey& key) const noexcept {
  return hash_function_key(key.file, key.line, key.name);
}

namespace detail {

void HashSlots::reserve(size_t n) {
  size_t wanted = std::bit_ceil(std::max<size_t>(16, n * 2));
  if (wanted > slots_.size()) rehash(wanted);
}

void HashSlots::reset(size_t expected) {
  slots_.assign(std::bit_ceil(std::max<size_t>(16, expected * 2)), Slot{});
  count_ = 0;
}

void HashSlots::grow() { rehash(std::max<size_t>(16, slots_.size() * 2)); }

void HashSlots::rehash(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  count_ = 0;
  for (const Slot& slot : old) {
    if (slot.position != npos) insert(slot.hash, slot.position);
  }
}

}  // namespace detail

namespace {

bool same_key(const FunctionKey& a, const FunctionKey& b) {
  return a.line == b.line && a.name == b.name && a.file == b.file;
}
bool same_key(const KeyView& a, const FunctionKey& b) { return a.equals(b); }

FunctionKey to_key(const FunctionKey& key) { return key; }
FunctionKey to_key(const KeyView& key) { return key.materialize(); }

void index_callers(detail::CallerIndex& index, size_t count) {
  index.slots.clear();
  if (count > kLinearCallers) {
    index.slots.reserve(count);
    for (size_t i = 0; i < count; ++i) index.slots.insert(index.hashes[i], static_cast<uint32_t>(i));
  }
}

template <class Key>
void merge_caller(FunctionStats& target, detail::CallerIndex& index, const Key& key,
                  uint64_t hash, const CallerStats& stats) {
  auto& callers = target.callers;
  uint32_t found = detail::HashSlots::npos;
  if (index.slots.size() == 0) {
    for (size_t i = 0; i < index.hashes.size(); ++i) {
      if (index.hashes[i] == hash && same_key(key, callers[i].first)) {
        found = static_cast<uint32_t>(i);
        break;
      }
    }
  } else {
    found = index.slots.find(hash, [&](uint32_t i) { return same_key(key, callers[i].first); });
  }
  if (found != detail::HashSlots::npos) {
    add_caller_stats(callers[found].second, stats);
    return;
  }
  callers.emplace_back(to_key(key), stats);
  index.hashes.push_back(hash);
  if (index.slots.size() != 0) {
    index.slots.insert(hash, static_cast<uint32_t>(callers.size() - 1));
  } else if (callers.size() > kLinearCallers) {
    index_callers(index, callers.size());
  }
}

}  // namespace

void StatsTable::reserve(size_t n) {
  entries_.reserve(n);
  hashes_.reserve(n);
  caller_index_.reserve(n);
  index_.reserve(n);
}

uint32_t StatsTable::find_position(const FunctionKey& key, uint64_t hash) const {
  return index_.find(hash, [&](uint32_t i) { return same_key(key, entries_[i].first); });
}

uint32_t StatsTable::append(FunctionKey key, uint64_t hash) {
  auto position = static_cast<uint32_t>(entries_.size());
  entries_.emplace_back(std::move(key), FunctionStats{});
  hashes_.push_back(hash);
  caller_index_.emplace_back();
  index_.insert(hash, position);
  return position;
}

detail::CallerIndex& StatsTable::caller_index(uint32_t position) {
  detail::CallerIndex& index = caller_index_[position];
  if (!index.valid) {
    const auto& callers = entries_[position].second.callers;
    index.hashes.clear();
    index.hashes.reserve(callers.size());
    for (const auto& [key, stats] : callers) {
      index.hashes.push_back(hash_function_key(key.file, key.line, key.name));
    }
    index_callers(index, callers.size());
    index.valid = true;
  }
  return index;
}

FunctionStats& StatsTable::operator[](const FunctionKey& key) {
  uint64_t hash = FunctionKeyHash{}(key);
  uint32_t position = find_position(key, hash);
  if (position == detail::HashSlots::npos) position = append(key, hash);
  // The caller may change anything through the reference: drop what was derived from it.
  caller_index_[position].valid = false;
  total_tt_tracked_ = false;
  return entries_[position].second;
}

const FunctionStats* StatsTable::find(const FunctionKey& key) const {
  uint32_t position = find_position(key, FunctionKeyHash{}(key));
  return position == detail::HashSlots::npos ? nullptr : &entries_[position].second;
}

void StatsTable::add(const StatsTable& other) {
  if (&other == this) {
    StatsTable copy = other;
    add(copy);
    return;
  }
  double total = total_tt() + other.total_tt();
  for (size_t i = 0; i < other.entries_.size(); ++i) {
    const FunctionKey& key = other.entries_[i].first;
    const FunctionStats& source = other.entries_[i].second;
    uint64_t hash = other.hashes_[i];
    const detail::CallerIndex& source_index = other.caller_index_[i];
    auto source_hash = [&](size_t c) {
      if (source_index.valid) return source_index.hashes[c];
      const FunctionKey& k = source.callers[c].first;
      return hash_function_key(k.file, k.line, k.name);
    };
    uint32_t position = find_position(key, hash);
    if (position == detail::HashSlots::npos) {
      position = append(key, hash);
      FunctionStats& target = entries_[position].second;
      // (0, 0, 0, 0, {}) + stat: the times go through a float addition (-0.0 becomes 0.0),
      // the callers dict is a plain copy.
      target.cc = source.cc;
      target.nc = source.nc;
      target.tt = source.tt + 0.0;
      target.ct = source.ct + 0.0;
      target.callers = source.callers;
      detail::CallerIndex& index = caller_index_[position];
      for (size_t c = 0; c < source.callers.size(); ++c) index.hashes.push_back(source_hash(c));
      index_callers(index, source.callers.size());
      index.valid = true;
      continue;
    }
    FunctionStats& target = entries_[position].second;
    target.cc = add_counts(source.cc, target.cc);
    target.nc = add_counts(source.nc, target.nc);
    target.tt = source.tt + target.tt;
    target.ct = source.ct + target.ct;
    detail::CallerIndex& index = caller_index(position);
    for (size_t c = 0; c < source.callers.size(); ++c) {
      const auto& [caller_key, caller_stats] = source.callers[c];
      merge_caller(target, index, caller_key, source_hash(c), caller_stats);
    }
  }
  total_tt_ = total;
  total_tt_tracked_ = true;
}

void StatsTableAccess::merge(StatsTable& table, const ParsedStats& parsed, bool fresh) {
  double total = fresh ? parsed.total_tt : table.total_tt() + parsed.total_tt;
  // Only a fresh table is sized up front: an exact reserve on every add would defeat the
  // vectors' geometric growth.
  if (fresh) table.reserve(parsed.functions.size());
  for (const FunctionView& f : parsed.functions) {
    const CallerView* callers = parsed.callers.data() + f.callers_begin;
    uint32_t position = table.index_.find(
        f.key.hash, [&](uint32_t i) { return f.key.equals(table.entries_[i].first); });
    if (position == detail::HashSlots::npos) {
      position = table.append(f.key.materialize(), f.key.hash);
      FunctionStats& target = table.entries_[position].second;
      target.cc = f.cc;
      target.nc = f.nc;
      // pstats.Stats(path) keeps the loaded values; Stats.add adds them to (0, 0, 0, 0, {}).
      target.tt = fresh ? f.tt : f.tt + 0.0;
      target.ct = fresh ? f.ct : f.ct + 0.0;
      target.callers.reserve(f.callers_count);
      for (uint32_t c = 0; c < f.callers_count; ++c) {
        target.callers.emplace_back(callers[c].key.materialize(), callers[c].stats);
      }
      if (!fresh) {  // this table is an accumulator: index the callers while their hashes are at hand
        detail::CallerIndex& index = table.caller_index_[position];
        index.hashes.reserve(f.callers_count);
        for (uint32_t c = 0; c < f.callers_count; ++c) index.hashes.push_back(callers[c].key.hash);
        index_callers(index, f.callers_count);
        index.valid = true;
      }
      continue;
    }
    FunctionStats& target = table.entries_[position].second;
    target.cc = add_counts(f.cc, target.cc);
    target.nc = add_counts(f.nc, target.nc);
    target.tt = f.tt + target.tt;
    target.ct = f.ct + target.ct;
    detail::CallerIndex& index = table.caller_index(position);
    for (uint32_t c = 0; c < f.callers_count; ++c) {
      merge_caller(target, index, callers[c].key, callers[c].key.hash, callers[c].stats);
    }
  }
  table.total_tt_ = total;
  table.total_tt_tracked_ = true;
}

void StatsTableAccess::assign(StatsTable& table, std::vector<StatsTable::Entry> entries, double total_tt) {
  table = StatsTable{};
  table.reserve(entries.size());
  table.entries_ = std::move(entries);
  for (uint32_t i = 0; i < table.entries_.size(); ++i) {
    const FunctionKey& key = table.entries_[i].first;
    uint64_t hash = hash_function_key(key.file, key.line, key.name);
    table.hashes_.push_back(hash);
    table.index_.insert(hash, i);
  }
  table.caller_index_.resize(table.entries_.size());  // built when an add first needs it
  table.total_tt_ = total_tt;
  table.total_tt_tracked_ = true;
}

int64_t StatsTable::total_calls() const {
  int64_t total = 0;
  for (const auto& [key, stats] : entries_) total = add_counts(total, stats.nc);
  return total;
}

int64_t StatsTable::primitive_calls() const {
  int64_t total = 0;
  for (const auto& [key, stats] : entries_) total = add_counts(total, stats.cc);
  return total;
}

double StatsTable::total_tt() const {
  if (total_tt_tracked_) return total_tt_;
  double total = 0.0;  // pstats starts from int 0 and adds in dict order
  for (const auto& [key, stats] : entries_) total += stats.tt;
  return total;
}

namespace {

bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

bool identical_callers(const CallerStats& a, const CallerStats& b) {
  return a.is_count == b.is_count && a.nc == b.nc && a.cc == b.cc && same_bits(a.tt, b.tt) &&
         same_bits(a.ct, b.ct);
}

}  // namespace

bool identical(const StatsTable& a, const StatsTable& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& [ka, sa] = a.entries()[i];
    const auto& [kb, sb] = b.entries()[i];
    if (ka != kb || sa.cc != sb.cc || sa.nc != sb.nc || !same_bits(sa.tt, sb.tt) ||
        !same_bits(sa.ct, sb.ct) || sa.callers.size() != sb.callers.size()) {
      return false;
    }
    for (size_t c = 0; c < sa.callers.size(); ++c) {
      if (sa.callers[c].first != sb.callers[c].first ||
          !identical_callers(sa.callers[c].second, sb.callers[c].second)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace sprof::store
