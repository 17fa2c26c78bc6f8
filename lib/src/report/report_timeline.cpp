// The report's timeline panel: for each sampled thread what it ran (the leaf function of each
// sample, over the time the sample stands for), and for each GPU stream its kernels, copies and
// memsets, on the job's time axis: what Nsight Systems and Perfetto show first, from the data the
// Chrome trace export is made of.

#include "report/report_timeline.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "sprof/gpu_report.hpp"
#include "sprof/sampled_profile.hpp"

namespace sprof::report {
namespace {

class NameIndex {
 public:
  explicit NameIndex(std::vector<std::string>& names) : names_(names) {}
  uint32_t operator()(const std::string& name) {
    auto [it, added] = index_.emplace(name, static_cast<uint32_t>(names_.size()));
    if (added) names_.push_back(name);
    return it->second;
  }

 private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, uint32_t> index_;
};

// Appends [start, end) to a row, merged with the last segment when it continues it with the same
// name and state (the gap between two samples of one thread is the later one's weight).
void append(TimelineRow& row, double start_s, double end_s, uint32_t name, bool idle) {
  if (end_s <= start_s) return;
  if (!row.segments.empty()) {
    TimelineSegment& last = row.segments.back();
    start_s = std::max(start_s, last.end_s);
    if (end_s <= start_s) return;
    if (last.name == name && last.idle == idle && start_s - last.end_s < 1e-6) {
      last.end_s = end_s;
      return;
    }
  }
  row.segments.push_back({start_s, end_s, name, idle});
}

// Spans narrower than `quantum_s` (a pixel of a wide screen) are gathered, in order, into buckets
// of about that width, each named for its longest piece: the panel stays a few tens of thousands
// of spans for any run, and a bucket never grows past the quantum, so the run keeps its detail.
void coarsen(TimelineRow& row, double quantum_s) {
  std::vector<TimelineSegment> out;
  double longest = 0;  // of the pieces in out.back()
  for (const TimelineSegment& s : row.segments) {
    const double length = s.end_s - s.start_s;
    if (!out.empty()) {
      TimelineSegment& last = out.back();
      const bool small = length < quantum_s && last.end_s - last.start_s < quantum_s;
      if (small && s.start_s - last.end_s < quantum_s && s.end_s - last.start_s <= 2 * quantum_s) {
        if (length > longest) {
          longest = length;
          last.name = s.name;
          last.idle = s.idle;
        }
        last.end_s = s.end_s;
        continue;
      }
    }
    out.push_back(s);
    longest = length;
  }
  row.segments = std::move(out);
}

size_t segment_count(const Timeline& t) {
  size_t n = 0;
  for (const TimelineRow& r : t.rows) n += r.segments.size();
  return n;
}

}  // namespace

void add_thread_rows(const store::ProfileSamples& samples, int64_t job_start_us, Timeline& timeline) {
  const store::Manifest& m = *samples.manifest;
  NameIndex index(timeline.names);
  std::vector<uint32_t> frames;
  for (const store::ProcessSamples& p : samples.processes) {
    const store::SampleLog& log = p.log;
    const int32_t pid = query::log_pid(log);
    std::vector<TimelineRow> rows(log.threads().size());
    std::vector<int64_t> previous(log.threads().size(), INT64_MIN);
    std::unordered_map<uint32_t, uint32_t> leaf_name;  // stack -> name index
    log.for_each_sample([&](const store::SampleRecord& r) {
      if (r.thread >= rows.size()) return;
      const int64_t begin_ns = std::max(r.time_ns - std::max<int64_t>(r.weight_ns, 0), previous[r.thread]);
      previous[r.thread] = r.time_ns;
      if (r.stack == 0) return;
      auto known = leaf_name.find(r.stack);
      if (known == leaf_name.end()) {
        log.stack_frames(r.stack, frames);  // leaf first
        if (frames.empty()) return;
        known = leaf_name.emplace(r.stack, index(log.functions()[log.frames()[frames.front()].function].name)).first;
      }
      auto seconds = [&](int64_t ns) { return static_cast<double>(m.to_epoch_us(ns) - job_start_us) / 1e6; };
      append(rows[r.thread], seconds(begin_ns), seconds(r.time_ns), known->second, r.idle());
    });
    for (size_t t = 0; t < rows.size(); ++t) {
      if (rows[t].segments.empty()) continue;
      std::string name = query::thread_name(log.threads()[t], pid);
      rows[t].label = fmt::format("pid {} {}", pid, name.empty() ? fmt::format("thread {}", log.threads()[t].native_tid) : name);
      rows[t].pid = pid;
      timeline.rows.push_back(std::move(rows[t]));
    }
  }
}

Status add_gpu_rows(const query::Profile& profile, int64_t job_start_us, Timeline& timeline) {
  SPROF_TRY(GpuInput input, load_gpu_input(profile));
  NameIndex index(timeline.names);
  std::map<std::pair<int32_t, int64_t>, TimelineRow> streams;
  std::vector<const store::GpuOp*> ops;
  for (const store::GpuOp& op : input.trace.ops) ops.push_back(&op);
  std::sort(ops.begin(), ops.end(), [](const store::GpuOp* a, const store::GpuOp* b) { return a->start_ns < b->start_ns; });
  for (const store::GpuOp* op : ops) {
    TimelineRow& row = streams[{op->device, op->stream}];
    auto seconds = [&](int64_t ns) {
      return static_cast<double>((ns + input.epoch_offset_ns) / 1000 - job_start_us) / 1e6;
    };
    append(row, seconds(op->start_ns), seconds(op->end_ns), index(std::string(op->name)), false);
  }
  for (auto& [key, row] : streams) {
    row.label = fmt::format("GPU {} stream {}", key.first, key.second);
    row.gpu = true;
    timeline.rows.push_back(std::move(row));
  }
  return {};
}

void fit_timeline(Timeline& timeline, double duration_s, size_t max_segments) {
  // Each pass doubles the quantum from a 4000th of the run: a fine panel where it fits.
  for (double quantum = duration_s / 4000; segment_count(timeline) > max_segments && quantum < duration_s; quantum *= 2) {
    for (TimelineRow& row : timeline.rows) coarsen(row, quantum);
    timeline.note = quantum >= 1 ? fmt::format("spans shorter than {:.3g} s merged into their neighbours", quantum)
                                 : fmt::format("spans shorter than {:.3g} ms merged into their neighbours", quantum * 1e3);
  }
}

}  // namespace sprof::report
