#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "sprof/query.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/pstats.hpp"

namespace sprof::query {
namespace {

// Files are read and parsed by a few threads while this thread adds them to the table in
// selection order: the float sums must follow smdebug's order, and parsing (most of the work)
// then overlaps with adding. The parsing threads also number each file's function keys in a
// shared pool, so that the adding, which no other thread can share, compares no strings.
// Workers stay less than kAhead files ahead of the adding, in a ring of kAhead parsed files
// whose buffers are reused: memory holds a window of files, not the selection, and nothing is
// allocated per file.
constexpr size_t kAhead = 64;
// The adding outruns the parsing, so it would wait for nearly every file: a futex wake and a
// context switch per file. It waits for this many instead, then adds them in a row.
constexpr size_t kBatch = 8;

struct Slot {
  store::ParsedPstats parsed;
  Status status;
  bool ready = false;
};

class ParsePipeline {
 public:
  ParsePipeline(const Selection& records, const store::ProfileFiles& files, unsigned threads)
      : records_(records), files_(files), ring_(kAhead) {
    for (unsigned t = 0; t < threads; ++t) pool_.emplace_back([this] { work(); });
  }
  ~ParsePipeline() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    room_.notify_all();
    for (auto& thread : pool_) thread.join();
  }

  const store::FunctionKeyPool& keys() const { return keys_; }

  // The i-th file, parsed (or why not), waiting for it; i counts up from 0 by one. The slot of
  // i - 1 goes back to the workers.
  Slot& take(size_t i) {
    std::unique_lock lock(mutex_);
    if (i > 0) {
      taken_ = i;
      ring_[(i - 1) % kAhead].ready = false;
      if (workers_waiting_ > 0) room_.notify_all();
    }
    Slot& slot = ring_[i % kAhead];
    if (!slot.ready) {
      waiting_until_ = std::min(i + kBatch, records_.size());
      taker_waiting_ = true;
      done_.wait(lock, [&] { return batch_ready(); });
      taker_waiting_ = false;
    }
    return slot;
  }

 private:
  void work() {
    store::FunctionKeyCache keys(keys_);
    for (;;) {
      size_t i;
      {
        std::unique_lock lock(mutex_);
        ++workers_waiting_;
        room_.wait(lock, [&] { return stopping_ || next_ >= records_.size() || next_ < taken_ + kAhead; });
        --workers_waiting_;
        if (stopping_ || next_ >= records_.size()) return;
        i = next_++;
      }
      Slot& slot = ring_[i % kAhead];  // the taker is done with it, and no other worker has i
      slot.status = store::read_pstats_into(records_[i]->path, slot.parsed, files_);
      if (slot.status.ok()) keys.number_keys(slot.parsed);
      bool wake;
      {
        std::lock_guard lock(mutex_);
        slot.ready = true;
        wake = taker_waiting_ && i >= taken_ && i < waiting_until_ && batch_ready();
      }
      if (wake) done_.notify_one();
    }
  }

  // Under the lock: every file the waiting taker asked for, [taken_, waiting_until_), is parsed.
  bool batch_ready() const {
    for (size_t j = taken_; j < waiting_until_; ++j) {
      if (!ring_[j % kAhead].ready) return false;
    }
    return true;
  }

  const Selection& records_;
  const store::ProfileFiles& files_;
  store::FunctionKeyPool keys_;
  std::vector<Slot> ring_;
  std::vector<std::thread> pool_;
  std::mutex mutex_;
  std::condition_variable room_, done_;
  size_t next_ = 0, taken_ = 0;
  size_t waiting_until_ = 0;  // the taker waits for the files from taken_ up to this one
  unsigned workers_waiting_ = 0;
  bool taker_waiting_ = false;
  bool stopping_ = false;
};

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

namespace {

// Adds `records[begin, end)` of the pipeline's records into one aggregate, in order.
Result<Aggregate> add_selection(ParsePipeline& pipeline, const Selection& records, size_t begin, size_t end,
                                bool strict) {
  Aggregate out;
  store::PooledStatsTable table(pipeline.keys());
  for (size_t i = begin; i < end; ++i) {
    const StatsRecord* record = records[i];
    Slot& slot = pipeline.take(i);
    if (!slot.status.ok()) {
      if (strict) {
        return make_error(ErrorKind::bad_input, "{} (an error with --strict)", slot.status.error().message);
      }
      out.unreadable.push_back(store::Problem{record->path, slot.status.error().message});
      continue;
    }
    table.add(slot.parsed);
    out.used.push_back(record);
    out.wall_seconds += record_seconds(*record);
  }
  out.table = table.table();
  out.total_calls = out.table.total_calls();
  out.primitive_calls = out.table.primitive_calls();
  out.total_tt = out.table.total_tt();
  return out;
}

unsigned reading_threads(const AggregateOptions& options, size_t files) {
  unsigned threads = options.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  return static_cast<unsigned>(std::min<size_t>(threads, (files + 7) / 8));
}

const store::ProfileFiles& files_of(const AggregateOptions& options) {
  return options.files != nullptr ? *options.files : store::local_files();
}

}  // namespace

Result<Aggregate> aggregate(const Selection& records, const AggregateOptions& options) {
  ParsePipeline pipeline(records, files_of(options), reading_threads(options, records.size()));
  return add_selection(pipeline, records, 0, records.size(), options.strict);
}

Result<std::vector<Aggregate>> aggregate_each(const std::vector<Selection>& selections,
                                              const AggregateOptions& options) {
  Selection all;
  for (const Selection& selection : selections) all.insert(all.end(), selection.begin(), selection.end());
  ParsePipeline pipeline(all, files_of(options), reading_threads(options, all.size()));
  std::vector<Aggregate> out;
  out.reserve(selections.size());
  size_t begin = 0;
  for (const Selection& selection : selections) {
    SPROF_TRY(Aggregate aggregate, add_selection(pipeline, all, begin, begin + selection.size(), options.strict));
    out.push_back(std::move(aggregate));
    begin += selection.size();
  }
  return out;
}

Status write_aggregate_pstats(const std::filesystem::path& path, const Aggregate& aggregate) {
  if (aggregate.table.empty()) {
    return make_error(ErrorKind::bad_input,
                      "nothing selected, so no pstats file written to {} (pstats cannot load an empty stats file)",
                      path.string());
  }
  SPROF_TRY_STATUS(store::write_pstats(path, aggregate.table));
  spdlog::info("Wrote {} ({} functions from {} stats files)", path.string(), aggregate.table.size(),
               aggregate.used.size());
  return {};
}

}  // namespace sprof::query
