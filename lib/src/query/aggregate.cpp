#include <algorithm>
#include <atomic>
#include <thread>

#include "sprof/query.hpp"
#include "sprof/profile_files.hpp"

namespace sprof::query {
namespace {

// Files are read a chunk at a time by a few threads (so cold-cache reads overlap), then
// decoded and added on this thread in selection order: the float sums must follow smdebug's
// order, and StatsTable::add_bytes merges without building a table per file.
constexpr size_t kChunk = 64;

void read_chunk(const Selection& records, size_t first, size_t count,
                std::vector<std::string>& bytes, std::vector<Status>& status, unsigned threads) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      const auto& path = records[first + i]->path;
      status[i] = store::files_for(path).read(path, bytes[i]);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
}

}  // namespace

void Aggregate::add(const Aggregate& other) {
  table.add(other.table);
  // pstats.Stats.add sums the running totals; StatsTable tracks total_tt the same way.
  total_calls += other.total_calls;
  primitive_calls += other.primitive_calls;
  total_tt = table.total_tt();
  used.insert(used.end(), other.used.begin(), other.used.end());
  unreadable.insert(unreadable.end(), other.unreadable.begin(), other.unreadable.end());
  wall_seconds += other.wall_seconds;
  for (const ThreadTime& t : other.threads) {
    auto same = std::find_if(threads.begin(), threads.end(), [&](const ThreadTime& mine) {
      return mine.pid == t.pid && mine.tid == t.tid && mine.name == t.name;
    });
    if (same == threads.end()) {
      threads.push_back(t);
    } else {
      same->seconds += t.seconds;
    }
  }
  std::stable_sort(threads.begin(), threads.end(),
                   [](const ThreadTime& a, const ThreadTime& b) { return a.seconds > b.seconds; });
}

double record_seconds(const StatsRecord& record) {
  return std::max(0.0, (record.name.end.time_us - record.name.start.time_us) / 1e6);
}

Result<Aggregate> aggregate(const Selection& records, const AggregateOptions& options) {
  unsigned threads = options.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  Aggregate out;
  std::vector<std::string> bytes(kChunk);
  std::vector<Status> status(kChunk);
  for (size_t first = 0; first < records.size(); first += kChunk) {
    size_t count = std::min(kChunk, records.size() - first);
    read_chunk(records, first, count, bytes, status,
               static_cast<unsigned>(std::min<size_t>(threads, (count + 7) / 8)));
    for (size_t i = 0; i < count; ++i) {
      const StatsRecord* record = records[first + i];
      // add_bytes leaves the table unchanged when the file does not parse.
      Status added = status[i].ok() ? out.table.add_bytes(bytes[i], record->path.string())
                                    : status[i];
      if (!added.ok()) {
        if (options.strict) {
          return make_error(ErrorKind::bad_input, "{} (an error with --strict)",
                            added.error().message);
        }
        out.unreadable.push_back(store::Problem{record->path, added.error().message});
        continue;
      }
      out.used.push_back(record);
      out.wall_seconds += record_seconds(*record);
    }
  }
  out.total_calls = out.table.total_calls();
  out.primitive_calls = out.table.primitive_calls();
  out.total_tt = out.table.total_tt();
  return out;
}

}  // namespace sprof::query
