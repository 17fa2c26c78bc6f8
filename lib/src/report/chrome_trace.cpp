// A profile as one Chrome trace in kineto's conventions (see sprof/chrome_trace.hpp). Written
// as text directly: traces reach hundreds of MB, and a JSON tree of them would take several
// times that in memory.

#include "sprof/chrome_trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "sprof/modes.hpp"
#include "common/json_text.hpp"

namespace sprof::report {
namespace {

// Whether an event [begin, end) overlaps the trace's range, when it has one.
bool in_range(const ChromeTraceParts& parts, int64_t begin_ns, int64_t end_ns) {
  return !parts.range_ns || (end_ns >= parts.range_ns->first && begin_ns < parts.range_ns->second);
}

using store::append_json_string;

// An event's [begin, end) cut to the trace's range: a trace window's Python slices stop at its
// edges, and a CUDA call that ran past them must too, or it would straddle them.
std::pair<int64_t, int64_t> clipped(const ChromeTraceParts& parts, int64_t begin_ns, int64_t end_ns) {
  if (!parts.range_ns) return {begin_ns, end_ns};
  return {std::max(begin_ns, parts.range_ns->first), std::min(end_ns, parts.range_ns->second)};
}

class TraceText {
 public:
  TraceText(std::string& out, int64_t offset_ns) : out_(out), offset_ns_(offset_ns) {}

  // Whole epoch µs, as kineto writes them: a viewer reads them as doubles, exact to the µs,
  // where µs with ns decimals (~1.8e15 with 3 decimals) round to a 0.25 µs grid and an event that
  // starts where another ends seems to start inside it. Every time is floored the same way, and a
  // duration is the difference of floored ends, so ts + dur of one event is exactly the ts of one
  // that starts where it ends.
  int64_t micros(int64_t ns) const {
    int64_t t = ns + offset_ns_;
    return t < 0 ? 0 : t / 1000;
  }
  void time(int64_t ns) { fmt::format_to(std::back_inserter(out_), "{}", micros(ns)); }
  // Starts an event object: {"ph": ..., "cat": ..., "name": ..., "pid": ..., "tid": ...
  void begin(const char* ph, std::string_view cat, std::string_view name, int64_t pid, int64_t tid) {
    out_ += first_ ? "\n  " : ",\n  ";
    first_ = false;
    out_ += "{\"ph\": \"";
    out_ += ph;
    out_ += '"';
    if (!cat.empty()) {
      out_ += ", \"cat\": ";
      append_json_string(out_, cat);
    }
    out_ += ", \"name\": ";
    append_json_string(out_, name);
    fmt::format_to(std::back_inserter(out_), ", \"pid\": {}, \"tid\": {}", pid, tid);
    ++events;
  }
  void complete(std::string_view cat, std::string_view name, int64_t pid, int64_t tid, int64_t start, int64_t end) {
    begin("X", cat, name, pid, tid);
    out_ += ", \"ts\": ";
    time(start);
    fmt::format_to(std::back_inserter(out_), ", \"dur\": {}", std::max<int64_t>(micros(end) - micros(start), 0));
  }
  std::string& raw() { return out_; }
  uint64_t events = 0;

 private:
  std::string& out_;
  int64_t offset_ns_;
  bool first_ = true;
};

void metadata(TraceText& t, const char* what, int64_t pid, int64_t tid, std::string_view key, std::string_view value) {
  t.begin("M", "", what, pid, tid);
  t.raw() += ", \"args\": {";
  append_json_string(t.raw(), key);
  t.raw() += ": ";
  append_json_string(t.raw(), value);
  t.raw() += "}}";
}

void sort_index(TraceText& t, const char* what, int64_t pid, int64_t tid, int64_t index) {
  t.begin("M", "", what, pid, tid);
  fmt::format_to(std::back_inserter(t.raw()), ", \"args\": {{\"sort_index\": {}}}}}", index);
}

std::string mode_keys(Mode mode) {
  switch (mode) {
    case Mode::train: return "Step:ModeKeys.TRAIN";
    case Mode::eval: return "Step:ModeKeys.EVAL";
    case Mode::predict: return "Step:ModeKeys.PREDICT";
    default: return "Step:ModeKeys.GLOBAL";
  }
}

// CUDA calls per OS thread of a process, [start, end) ns, merged where they nest (a runtime call
// around its driver call) and sorted: the Python slices make room for them (python_slices).
using CallSpans = std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>>;

void merge_spans(std::vector<std::pair<int64_t, int64_t>>& spans) {
  std::sort(spans.begin(), spans.end());
  size_t out = 0;
  for (const auto& s : spans) {
    if (out > 0 && s.first < spans[out - 1].second) {
      spans[out - 1].second = std::max(spans[out - 1].second, s.second);
    } else {
      spans[out++] = s;
    }
  }
  spans.resize(out);
}

// Python stacks of one thread as slices: a frame open since sample i stays open while later
// samples keep it at the same depth (same function), and closes at the first sample without it.
// Slices end at clip_end_ns at the latest (a time range's end: the last sample's interval would
// reach past it). Viewers (DevTools, Perfetto, speedscope) nest slices by time, make the first of
// two equal slices the parent and drop a slice that only partly overlaps another, so:
// - the open stack is cut and reopened at every step edge of the thread (`edges_ns`, by native
//   tid), where a step slice starts or ends;
// - where the stack changes (or ends) while a CUDA call of the thread is running, the change
//   moves out of the call: to its start when the call began after the stack's last change and
//   the start of what is open (the call then runs under the stack seen during it), else to its
//   end (it ran under the earlier stack), so that the call nests instead of straddling an edge;
//   the end of the thread's samples is such a change;
// - each thread's slices are written sorted by start, longest first, outermost first, in the
//   whole µs the trace holds (two ends a few ns apart can floor to one µs), and a slice shorter
//   than a µs is left out.
void python_slices(TraceText& t, const store::SampleLog& log, const query::SampleFilter& filter, int64_t clip_end_ns,
                   const std::map<int64_t, std::vector<int64_t>>& edges_ns, const CallSpans& calls,
                   ChromeTraceCounts& counts) {
  struct Open {
    uint32_t function = 0;
    int32_t line = 0;
    int64_t start = 0;
  };
  struct Slice {
    int64_t start_us, end_us;
    uint32_t depth, function;
    int32_t line;
  };
  struct ThreadState {
    std::vector<Open> open;
    int64_t last_ns = 0;
    int64_t last_weight = 0;
    const std::vector<int64_t>* edges = nullptr;  // sorted
    size_t next_edge = 0;
    const std::vector<std::pair<int64_t, int64_t>>* calls = nullptr;  // disjoint, by start
    int64_t floor = INT64_MIN;  // the latest close or cut: nothing opens before it
    std::vector<Slice> slices;
  };
  std::vector<ThreadState> threads(log.threads().size());
  std::vector<uint32_t> frames;
  int32_t pid = log.pid();
  auto tid_of = [&](uint32_t thread) -> int64_t {
    const store::LogThread& th = log.threads()[thread];
    return th.native_tid != 0 ? th.native_tid : int64_t(th.python_thread_id & 0x7FFFFFFF);
  };
  auto close_from = [&](uint32_t thread, size_t depth, int64_t end) {
    end = std::min(end, clip_end_ns);
    ThreadState& s = threads[thread];
    for (size_t d = depth; d < s.open.size(); ++d) {
      const Open& o = s.open[d];
      int64_t start_us = t.micros(o.start), end_us = t.micros(std::max(end, o.start));
      if (end_us > start_us) s.slices.push_back({start_us, end_us, uint32_t(d), o.function, o.line});
    }
    if (s.open.size() > depth) s.open.resize(depth);
    s.floor = std::max(s.floor, end);
  };
  for (uint32_t i = 0; i < threads.size(); ++i) {
    if (auto edges = edges_ns.find(tid_of(i)); edges != edges_ns.end()) threads[i].edges = &edges->second;
    if (auto c = calls.find(tid_of(i)); c != calls.end()) threads[i].calls = &c->second;
  }
  // Cuts what is open at the thread's step edges up to `until` and reopens it there.
  auto cut_at_edges = [&](uint32_t thread, int64_t until) {
    ThreadState& s = threads[thread];
    if (s.edges == nullptr) return;
    while (s.next_edge < s.edges->size() && (*s.edges)[s.next_edge] <= until) {
      int64_t edge = (*s.edges)[s.next_edge++];
      s.floor = std::max(s.floor, std::min(edge, clip_end_ns));
      if (s.open.empty() || edge <= s.open.back().start || edge >= clip_end_ns) continue;
      std::vector<Open> reopened = s.open;
      close_from(thread, 0, edge);
      for (Open& o : reopened) o.start = edge;
      s.open = std::move(reopened);
    }
  };
  // Where a change of the stack (or its end) seen at `at` is placed: out of the CUDA call running
  // then, to its start when nothing open or closed since began after it, else to its end.
  auto change_at = [&](const ThreadState& s, int64_t at) {
    int64_t lo = std::max(s.floor, s.open.empty() ? INT64_MIN : s.open.back().start);
    if (s.calls != nullptr) {
      const auto& c = *s.calls;
      auto after = std::upper_bound(c.begin(), c.end(), std::make_pair(at, INT64_MIN));  // first starting at or after
      if (after != c.begin() && (after - 1)->second > at) at = (after - 1)->first >= lo ? (after - 1)->first : (after - 1)->second;
    }
    return std::max(at, lo);
  };
  const std::vector<bool> mask = filter.thread_mask(log);
  query::for_each_window_sample(filter, log, [&](const store::SampleRecord& r) {
    ThreadState& s = threads[r.thread];
    // A gap (idle samples filtered out, a paused sampler, a thread not seen for a while) ends what
    // was open: a sample stands for the time since its thread's previous one, so one that does
    // not reach back to the last sample kept leaves a hole.
    if (!s.open.empty() && r.time_ns - std::max<int64_t>(r.weight_ns, 0) > s.last_ns + 1'000'000) {
      int64_t end = std::min(s.last_ns + s.last_weight, r.time_ns);
      cut_at_edges(r.thread, end);
      close_from(r.thread, 0, change_at(s, end));
    }
    cut_at_edges(r.thread, r.time_ns);
    if (!filter.keeps(r, mask)) {
      if (!s.open.empty()) close_from(r.thread, 0, change_at(s, r.time_ns));
      return;
    }
    log.stack_frames(r.stack, frames);  // leaf first
    size_t depth = frames.size();
    size_t same = 0;
    while (same < s.open.size() && same < depth &&
           s.open[same].function == log.frames()[frames[depth - 1 - same]].function) {
      ++same;
    }
    int64_t at = same < s.open.size() || same < depth ? change_at(s, r.time_ns) : r.time_ns;
    close_from(r.thread, same, at);
    for (size_t d = same; d < depth; ++d) {
      const store::LogFrame& f = log.frames()[frames[depth - 1 - d]];
      s.open.push_back({f.function, f.line, at});
    }
    s.last_ns = r.time_ns;
    s.last_weight = std::max<int64_t>(r.weight_ns, 0);
  });
  for (uint32_t i = 0; i < threads.size(); ++i) {
    ThreadState& s = threads[i];
    // The last sample's reach is a guess at when the stack ended; a CUDA call running then moves
    // it as any other change (a sampler preempted under load leaves the end of a window without
    // samples, mid-call).
    int64_t end = s.last_ns + s.last_weight;
    cut_at_edges(i, end);
    close_from(i, 0, change_at(s, end));
    std::sort(s.slices.begin(), s.slices.end(), [](const Slice& a, const Slice& b) {
      if (a.start_us != b.start_us) return a.start_us < b.start_us;
      if (a.end_us != b.end_us) return a.end_us > b.end_us;
      return a.depth < b.depth;
    });
    for (const Slice& sl : s.slices) {
      const store::LogFunction& fn = log.functions()[sl.function];
      t.begin("X", "python_function", fn.name, pid, tid_of(i));
      fmt::format_to(std::back_inserter(t.raw()), ", \"ts\": {}, \"dur\": {}, \"args\": {{\"file\": ", sl.start_us,
                     sl.end_us - sl.start_us);
      append_json_string(t.raw(), fn.file);
      fmt::format_to(std::back_inserter(t.raw()), ", \"line\": {}}}}}", sl.line);
      ++counts.python_slices;
    }
  }
}

}  // namespace

ChromeTraceCounts write_chrome_trace(const ChromeTraceParts& parts, std::string& out) {
  ChromeTraceCounts counts;
  const store::GpuTrace* gpu = parts.gpu;
  out += "{\n\"schemaVersion\": 1,\n\"displayTimeUnit\": \"ms\",\n\"deviceProperties\": [";
  if (gpu != nullptr) {
    for (size_t i = 0; i < gpu->devices.size(); ++i) {
      const store::GpuDevice& d = gpu->devices[i];
      out += i == 0 ? "\n  {" : ",\n  {";
      fmt::format_to(std::back_inserter(out), "\"id\": {}, \"name\": ", d.id);
      append_json_string(out, d.name);
      out += ", \"uuid\": ";
      append_json_string(out, d.uuid);
      fmt::format_to(std::back_inserter(out), ", \"totalGlobalMem\": {}, \"computeMajor\": {}, \"computeMinor\": {}, \"numSms\": {}}}",
                     d.global_memory_bytes, d.compute_major, d.compute_minor, d.sm_count);
    }
  }
  out += "],\n";
  if (gpu != nullptr) {
    auto ranked = std::find_if(gpu->processes.begin(), gpu->processes.end(), [](const store::GpuProcess& p) { return p.rank >= 0; });
    if (ranked != gpu->processes.end()) {
      fmt::format_to(std::back_inserter(out), "\"distributedInfo\": {{\"rank\": {}, \"world_size\": {}}},\n", ranked->rank,
                     ranked->world_size);
    }
  }
  out += "\"traceEvents\": [";
  TraceText t(out, parts.epoch_offset_ns);

  // CPU processes and threads: names from the sample logs; threads that only made CUDA calls (a
  // thread without Python, as autograd's) are named after all events.
  std::map<int64_t, bool> named_processes;
  std::map<std::pair<int64_t, int64_t>, bool> named_threads;
  if (parts.samples != nullptr) {
    for (const store::ProcessSamples& p : parts.samples->processes) {
      const store::SampleLog& log = p.log;
      if (!parts.filter.keeps_process(log.pid())) continue;
      std::string name = log.processes().empty() ? "python" : log.processes().back().executable;
      metadata(t, "process_name", log.pid(), 0, "name", fmt::format("{} (pid {})", name, log.pid()));
      named_processes[log.pid()] = true;
      for (const store::LogThread& th : log.threads()) {
        if (th.native_tid == 0) continue;
        metadata(t, "thread_name", log.pid(), th.native_tid, "name", th.name.empty() ? fmt::format("thread {}", th.native_tid) : th.name);
        named_threads[{log.pid(), th.native_tid}] = true;
      }
      // The step edges of each thread, where its Python slices are cut so that they nest in the steps.
      std::map<int64_t, std::vector<int64_t>> edges;
      if (parts.steps != nullptr) {
        for (const timeline::ProcessTimeline& sp : parts.steps->processes) {
          if (sp.pid != log.pid()) continue;
          for (const timeline::Step& s : sp.steps) {
            auto& e = edges[s.tid != 0 ? s.tid : sp.pid];
            e.push_back(s.begin_ns);
            e.push_back(s.end_ns);
          }
        }
        for (auto& [tid, e] : edges) std::sort(e.begin(), e.end());
      }
      CallSpans calls;
      if (gpu != nullptr) {
        for (const store::GpuApiCall& call : gpu->api_calls) {
          if (call.pid == log.pid() && call.end_ns > call.start_ns && in_range(parts, call.start_ns, call.end_ns)) {
            calls[call.tid].push_back(clipped(parts, call.start_ns, call.end_ns));
          }
        }
        for (auto& [tid, spans] : calls) merge_spans(spans);
      }
      python_slices(t, log, parts.filter, parts.range_ns ? parts.range_ns->second : INT64_MAX, edges, calls, counts);
    }
  }

  if (parts.steps != nullptr) {
    for (const timeline::ProcessTimeline& p : parts.steps->processes) {
      if (!parts.filter.keeps_process(p.pid)) continue;
      for (const timeline::Step& s : p.steps) {
        if (!in_range(parts, s.begin_ns, s.end_ns)) continue;
        t.complete("user_annotation", mode_keys(s.mode), p.pid, s.tid != 0 ? s.tid : p.pid, s.begin_ns, s.end_ns);
        fmt::format_to(std::back_inserter(out), ", \"args\": {{\"step_num\": {}, \"global_step\": {}}}}}", s.step, s.global_step);
        ++counts.steps;
      }
      // What the program recorded through the API: Tasks, Frames and Events as slices on their
      // thread, markers as instants, counters as counter tracks (named domain:name).
      for (const timeline::RangeEvent& r : p.ranges) {
        if (!in_range(parts, r.begin_ns, r.end_ns)) continue;
        t.complete(store::to_string(r.kind), r.name, p.pid, r.tid != 0 ? r.tid : p.pid, r.begin_ns, r.end_ns);
        out += ", \"args\": {\"domain\": ";
        append_json_string(out, r.domain);
        out += "}}";
        ++counts.annotations;
      }
      for (const timeline::InstantEvent& i : p.instants) {
        if (!in_range(parts, i.t_ns, i.t_ns)) continue;
        t.begin("i", i.domain, i.name, p.pid, i.tid != 0 ? i.tid : p.pid);
        out += ", \"ts\": ";
        t.time(i.t_ns);
        out += i.scope == store::InstantScope::global ? ", \"s\": \"g\"}" : i.scope == store::InstantScope::thread ? ", \"s\": \"t\"}" : ", \"s\": \"p\"}";
        ++counts.annotations;
      }
      for (const timeline::CounterValue& c : p.counters) {
        if (!in_range(parts, c.t_ns, c.t_ns) || !std::isfinite(c.value)) continue;
        t.begin("C", c.domain, c.domain + ":" + c.name, p.pid, 0);
        out += ", \"ts\": ";
        t.time(c.t_ns);
        out += ", \"args\": {";
        append_json_string(out, c.name);
        fmt::format_to(std::back_inserter(out), ": {}}}}}", c.value);
        ++counts.annotations;
      }
    }
  }

  if (gpu != nullptr) {
    // GPU rows: one Chrome process per (process, device), sorted after the CPU ones.
    std::map<std::pair<int32_t, int32_t>, int64_t> gpu_pid;
    for (const store::GpuOp& op : gpu->ops) gpu_pid.emplace(std::make_pair(op.pid, op.device), 0);
    int64_t next = 0;
    std::map<int64_t, bool> streams_named;
    for (auto& [key, pid] : gpu_pid) {
      pid = kGpuPidBase + next++;
      std::string label = gpu_pid.size() > 1 && key.first != 0 ? fmt::format("GPU {} (pid {})", key.second, key.first)
                                                                : fmt::format("GPU {}", key.second);
      metadata(t, "process_name", pid, 0, "name", label);
      metadata(t, "process_labels", pid, 0, "labels", label);
      sort_index(t, "process_sort_index", pid, 0, 5'000'000 + next);
    }
    std::map<int32_t, size_t> process_index;
    for (const store::GpuProcess& p : gpu->processes) process_index.emplace(p.pid, process_index.size());
    auto flow_id = [&](int32_t pid, int64_t correlation) {
      auto it = process_index.find(pid);
      return int64_t(it == process_index.end() ? 0 : it->second) * (int64_t(1) << 32) + correlation;
    };
    std::unordered_map<int64_t, const store::GpuApiCall*> launch;
    for (const store::GpuApiCall& call : gpu->api_calls) {
      if (!in_range(parts, call.start_ns, call.end_ns)) continue;
      auto [begin, end] = clipped(parts, call.start_ns, call.end_ns);
      t.complete(call.driver ? "cuda_driver" : "cuda_runtime", call.name, call.pid, call.tid, begin, end);
      fmt::format_to(std::back_inserter(out), ", \"args\": {{\"correlation\": {}}}}}", call.correlation);
      ++counts.api_calls;
      if (call.correlation != 0) launch.emplace(flow_id(call.pid, call.correlation), &call);
    }
    for (const store::GpuOp& op : gpu->ops) {
      if (!in_range(parts, op.start_ns, op.end_ns)) continue;
      int64_t pid = gpu_pid[{op.pid, op.device}];
      if (!streams_named[pid * 1'000'000 + op.stream]) {
        streams_named[pid * 1'000'000 + op.stream] = true;
        metadata(t, "thread_name", pid, op.stream, "name", fmt::format("stream {}", op.stream));
      }
      const char* cat = op.kind == store::GpuOpKind::kernel ? "kernel" : op.kind == store::GpuOpKind::memcpy ? "gpu_memcpy" : "gpu_memset";
      t.complete(cat, op.name, pid, op.stream, op.start_ns, op.end_ns);
      fmt::format_to(std::back_inserter(out), ", \"args\": {{\"device\": {}, \"context\": {}, \"stream\": {}, \"correlation\": {}",
                     op.device, op.context, op.stream, op.correlation);
      if (op.kind == store::GpuOpKind::kernel) {
        fmt::format_to(std::back_inserter(out),
                       ", \"registers per thread\": {}, \"shared memory\": {}, \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}]",
                       op.registers_per_thread, op.shared_memory, op.grid[0], op.grid[1], op.grid[2], op.block[0], op.block[1],
                       op.block[2]);
      } else {
        double gb_s = op.duration_ns() > 0 ? double(op.bytes) / double(op.duration_ns()) : 0;
        fmt::format_to(std::back_inserter(out), ", \"bytes\": {}, \"memory bandwidth (GB/s)\": {:.6f}", op.bytes, gb_s);
      }
      out += "}}";
      ++counts.gpu_ops;
      // The launch arrow: "s" on the launching thread, "f" (binding to the enclosing slice) on the work.
      auto call = op.correlation != 0 ? launch.find(flow_id(op.pid, op.correlation)) : launch.end();
      if (call != launch.end()) {
        int64_t id = flow_id(op.pid, op.correlation);
        t.begin("s", "ac2g", "ac2g", call->second->pid, call->second->tid);
        fmt::format_to(std::back_inserter(out), ", \"id\": {}, \"ts\": ", id);
        t.time(call->second->start_ns);
        out += "}";
        t.begin("f", "ac2g", "ac2g", pid, op.stream);
        fmt::format_to(std::back_inserter(out), ", \"id\": {}, \"bp\": \"e\", \"ts\": ", id);
        t.time(op.start_ns);
        out += "}";
        ++counts.flows;
      }
    }
    for (const store::GpuSync& sync : gpu->syncs) {
      if (!in_range(parts, sync.start_ns, sync.end_ns)) continue;
      // kineto moves stream syncs off the stream's row so they do not overlap its kernels.
      auto [begin, end] = clipped(parts, sync.start_ns, sync.end_ns);
      t.complete("cuda_sync", sync.kind, sync.pid, sync.tid, begin, end);
      fmt::format_to(std::back_inserter(out), ", \"args\": {{\"cuda_sync_kind\": ");
      append_json_string(out, sync.kind);
      fmt::format_to(std::back_inserter(out), ", \"stream\": {}, \"correlation\": {}}}}}", sync.stream, sync.correlation);
    }
    for (const store::GpuOverhead& o : gpu->overheads) {
      if (!in_range(parts, o.start_ns, o.end_ns)) continue;
      t.complete("overhead", o.name, o.pid, 0, o.start_ns, o.end_ns);
      out += "}";
    }
    auto name_thread = [&](int64_t pid, int64_t tid) {
      if (!named_processes[pid]) {
        named_processes[pid] = true;
        metadata(t, "process_name", pid, 0, "name", fmt::format("pid {}", pid));
      }
      if (!named_threads[{pid, tid}]) {
        named_threads[{pid, tid}] = true;
        metadata(t, "thread_name", pid, tid, "name", tid == 0 ? std::string("CUDA (thread unknown)") : fmt::format("thread {}", tid));
      }
    };
    for (const store::GpuApiCall& call : gpu->api_calls) {
      if (in_range(parts, call.start_ns, call.end_ns)) name_thread(call.pid, call.tid);
    }
    for (const store::GpuSync& sync : gpu->syncs) {
      if (in_range(parts, sync.start_ns, sync.end_ns)) name_thread(sync.pid, sync.tid);
    }
    for (const store::GpuOverhead& o : gpu->overheads) {
      if (in_range(parts, o.start_ns, o.end_ns)) name_thread(o.pid, 0);
    }
  }
  out += "\n]\n}\n";
  counts.events = t.events;
  return counts;
}

}  // namespace sprof::report
