// PooledStatsTable: StatsTable's merge (stats_table.cpp, StatsTableAccess::merge with fresh =
// false) over numbered keys. The arithmetic and the order of every float addition are the
// same (stats_arithmetic.hpp); only the lookups differ: a function by an array indexed with its
// number, a caller by scanning numbers (or a small hash index once its list is long).

#include <stdexcept>

#include "store/pstats/function_key_pool.hpp"
#include "store/pstats/stats_arithmetic.hpp"

namespace sprof::store {

namespace {

uint64_t number_hash(uint32_t id) {
  uint64_t h = id * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

struct PooledCaller {
  uint32_t id;
  CallerStats stats;
};

struct PooledFunction {
  uint32_t id = 0;
  int64_t cc = 0, nc = 0;
  double tt = 0.0, ct = 0.0;
  std::vector<PooledCaller> callers;  // dict order
  detail::HashSlots caller_index;     // number -> callers[i], once callers is long

  void index_callers() {
    caller_index.reset(callers.size());
    for (uint32_t i = 0; i < callers.size(); ++i) caller_index.insert(number_hash(callers[i].id), i);
  }

  void add_caller(uint32_t id, const CallerStats& stats) {
    uint32_t found = detail::HashSlots::npos;
    if (caller_index.size() == 0) {
      for (uint32_t i = 0; i < callers.size(); ++i) {
        if (callers[i].id == id) {
          found = i;
          break;
        }
      }
    } else {
      found = caller_index.find(number_hash(id), [&](uint32_t i) { return callers[i].id == id; });
    }
    if (found != detail::HashSlots::npos) {
      add_caller_stats(callers[found].stats, stats);
      return;
    }
    callers.push_back(PooledCaller{id, stats});
    if (caller_index.size() != 0) {
      caller_index.insert(number_hash(id), static_cast<uint32_t>(callers.size() - 1));
    } else if (callers.size() > kLinearCallers) {
      index_callers();
    }
  }
};

}  // namespace

struct PooledStatsTable::Data {
  const FunctionKeyPool* pool;
  std::vector<PooledFunction> functions;  // dict order
  std::vector<uint32_t> position;         // by number: index into functions, or npos
  double total_tt = 0.0;                  // pstats' running total (an empty table's sum is 0.0)
};

PooledStatsTable::PooledStatsTable(const FunctionKeyPool& pool) : data_(std::make_unique<Data>()) {
  data_->pool = &pool;
}
PooledStatsTable::~PooledStatsTable() = default;

void PooledStatsTable::add(const ParsedPstats& parsed) {
  if (!parsed.data_) return;
  const ParsedStats& p = parsed.data_->parsed;
  if (p.numbered_by != data_->pool) {
    throw std::logic_error("PooledStatsTable::add: the file's keys were not numbered by this table's pool");
  }
  Data& d = *data_;
  const double total = d.total_tt + p.total_tt;
  for (size_t k = 0; k < p.functions.size(); ++k) {
    const FunctionView& f = p.functions[k];
    const uint32_t id = p.function_ids[k];
    if (id >= d.position.size()) d.position.resize(size_t{id} + 1, detail::HashSlots::npos);
    const CallerView* callers = p.callers.data() + f.callers_begin;
    const uint32_t* caller_ids = p.caller_ids.data() + f.callers_begin;
    if (d.position[id] == detail::HashSlots::npos) {
      d.position[id] = static_cast<uint32_t>(d.functions.size());
      PooledFunction& target = d.functions.emplace_back();
      target.id = id;
      target.cc = f.cc;
      target.nc = f.nc;
      target.tt = f.tt + 0.0;  // Stats.add adds it to (0, 0, 0, 0, {}): -0.0 becomes 0.0
      target.ct = f.ct + 0.0;
      target.callers.reserve(f.callers_count);
      for (uint32_t c = 0; c < f.callers_count; ++c) target.callers.push_back({caller_ids[c], callers[c].stats});
      if (target.callers.size() > kLinearCallers) target.index_callers();
      continue;
    }
    PooledFunction& target = d.functions[d.position[id]];
    target.cc = add_counts(f.cc, target.cc);
    target.nc = add_counts(f.nc, target.nc);
    target.tt = f.tt + target.tt;
    target.ct = f.ct + target.ct;
    for (uint32_t c = 0; c < f.callers_count; ++c) target.add_caller(caller_ids[c], callers[c].stats);
  }
  d.total_tt = total;
}

StatsTable PooledStatsTable::table() const {
  std::vector<StatsTable::Entry> entries;
  entries.reserve(data_->functions.size());
  {
    const FunctionKeyPool::Data& pool = *data_->pool->data_;
    std::lock_guard lock(pool.mutex);
    for (const PooledFunction& f : data_->functions) {
      FunctionStats stats{f.cc, f.nc, f.tt, f.ct, {}};
      stats.callers.reserve(f.callers.size());
      for (const PooledCaller& c : f.callers) stats.callers.emplace_back(pool.keys[c.id], c.stats);
      entries.emplace_back(pool.keys[f.id], std::move(stats));
    }
  }
  StatsTable out;
  StatsTableAccess::assign(out, std::move(entries), data_->total_tt);
  return out;
}

}  // namespace sprof::store
