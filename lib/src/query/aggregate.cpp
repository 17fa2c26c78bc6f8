#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "sprof/query.hpp"

namespace sprof::query {
namespace {

// Reading and decoding dominates; adding must stay sequential (float sums in smdebug's order),
// so files are decoded in parallel and added in order afterwards.
std::vector<std::optional<Result<store::StatsTable>>> load_all(const Selection& records,
                                                               unsigned threads) {
  std::vector<std::optional<Result<store::StatsTable>>> tables(records.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // Small selections are not worth a thread each.
  threads = static_cast<unsigned>(
      std::min<size_t>(threads, std::max<size_t>(1, records.size() / 8)));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < records.size(); i = next++) {
      tables[i].emplace(store::read_pstats(records[i]->path));
    }
  };
  if (threads <= 1) {
    work();
    return tables;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  return tables;
}

}  // namespace

void Aggregate::add(const Aggregate& other) {
  table.add(other.table);
  total_calls += other.total_calls;
  primitive_calls += other.primitive_calls;
  total_tt += other.total_tt;
  used.insert(used.end(), other.used.begin(), other.used.end());
  unreadable.insert(unreadable.end(), other.unreadable.begin(), other.unreadable.end());
}

Result<Aggregate> aggregate(const Selection& records, const AggregateOptions& options) {
  auto tables = load_all(records, options.threads);
  Aggregate out;
  for (size_t i = 0; i < records.size(); ++i) {
    Result<store::StatsTable>& loaded = *tables[i];
    if (!loaded.ok()) {
      if (options.strict) {
        return make_error(ErrorKind::bad_input, "{} (an error with --strict)",
                          loaded.error().message);
      }
      out.unreadable.push_back(store::Problem{records[i]->path, loaded.error().message});
      continue;
    }
    const store::StatsTable& table = loaded.value();
    // pstats.Stats(path) computes its totals on load; Stats.add then sums them.
    out.total_calls += table.total_calls();
    out.primitive_calls += table.primitive_calls();
    out.total_tt += table.total_tt();
    out.table.add(table);
    out.used.push_back(records[i]);
  }
  return out;
}

}  // namespace sprof::query
