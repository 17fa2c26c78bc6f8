#include "intervals/stats_builder.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>

namespace sprof::intervals {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// cProfile labels code by co_name; the sampler reads co_qualname on 3.11+ ("Model.forward",
// "f.<locals>.g"), whose last dotted part is co_name.
std::string_view code_name(std::string_view qualname) {
  size_t dot = qualname.rfind('.');
  return dot == std::string_view::npos ? qualname : qualname.substr(dot + 1);
}

}  // namespace

StatsBuilder::StatsBuilder(const store::SampleLog& log) : log_(log) {
  stacks_.resize(std::max<size_t>(log.stack_nodes().size(), 1));
  stacks_[0].ready = true;
  key_of_function_.assign(log.functions().size(), kNone);
}

uint32_t StatsBuilder::key_of(uint32_t function) {
  uint32_t& slot = key_of_function_[function];
  if (slot != kNone) return slot;
  const store::LogFunction& fn = log_.functions()[function];
  store::FunctionKey key{fn.file, fn.first_line, std::string(code_name(fn.name))};
  auto [it, inserted] = key_index_.emplace(key, static_cast<uint32_t>(keys_.size()));
  if (inserted) {
    keys_.push_back(std::move(key));
    key_counts_.emplace_back();
    key_touched_.push_back(0);
    key_callers_.emplace_back();
  }
  slot = it->second;
  return slot;
}

uint32_t StatsBuilder::edge_of(uint32_t caller, uint32_t callee) {
  uint64_t id = (uint64_t(caller) << 32) | callee;
  auto [it, inserted] = edge_index_.emplace(id, static_cast<uint32_t>(edge_ends_.size()));
  if (inserted) {
    edge_ends_.emplace_back(caller, callee);
    edge_counts_.emplace_back();
    edge_touched_.push_back(0);
  }
  return it->second;
}

const StatsBuilder::StackInfo& StatsBuilder::stack_info(uint32_t stack) {
  if (stack >= stacks_.size()) return stacks_[0];  // an id the log never defined: no frames
  StackInfo& info = stacks_[stack];
  if (info.ready) return info;
  log_.stack_frames(stack, scratch_);
  info.frames.assign(scratch_.rbegin(), scratch_.rend());
  const size_t n = info.frames.size();
  info.keys.resize(n);
  info.edges.assign(n, kNone);
  info.recursive.assign(n, 0);
  info.edge_recursive.assign(n, 0);
  for (size_t d = 0; d < n; ++d) {
    uint32_t key = key_of(log_.frames()[info.frames[d]].function);
    info.keys[d] = key;
    bool seen = std::find(info.keys.begin(), info.keys.begin() + static_cast<ptrdiff_t>(d), key) !=
                info.keys.begin() + static_cast<ptrdiff_t>(d);
    info.recursive[d] = seen ? 1 : 0;
    if (!seen) info.distinct_keys.push_back(key);
    if (d > 0) {
      uint32_t edge = edge_of(info.keys[d - 1], key);
      info.edges[d] = edge;
      bool edge_seen = std::find(info.edges.begin() + 1, info.edges.begin() + static_cast<ptrdiff_t>(d), edge) !=
                       info.edges.begin() + static_cast<ptrdiff_t>(d);
      info.edge_recursive[d] = edge_seen ? 1 : 0;
      if (!edge_seen) info.distinct_edges.push_back(edge);
    }
  }
  info.ready = true;
  return info;
}

void StatsBuilder::touch_key(uint32_t key) {
  if (key_touched_[key]) return;
  key_touched_[key] = 1;
  key_order_.push_back(key);
  key_callers_[key].clear();
}

void StatsBuilder::touch_edge(uint32_t edge) {
  if (edge_touched_[edge]) return;
  edge_touched_[edge] = 1;
  uint32_t callee = edge_ends_[edge].second;
  touch_key(callee);
  key_callers_[callee].push_back(edge);
}

// A frame continues the call seen at its depth in the thread's previous sample when the
// function is the same and its caller is the very same frame (same function, same line):
// otherwise the caller has moved on, so this is a new call.
// A sample without Python frames (the thread outside Python, or its frame pointer caught
// between frames) says nothing about which calls ended: it leaves the state alone, so counts
// stay a lower bound.
void StatsBuilder::observe(ThreadState& thread, uint32_t stack, bool kept) {
  if (stack == 0) return;
  const StackInfo& now = stack_info(stack);
  const StackInfo& before = stack_info(thread.stack);
  const size_t n = now.frames.size();
  const size_t common = std::min(n, before.frames.size());
  size_t same = 0;
  while (same < common && now.keys[same] == before.keys[same] &&
         (same == 0 || now.frames[same - 1] == before.frames[same - 1])) {
    ++same;
  }
  thread.stack = stack;
  thread.counted.resize(n);
  std::fill(thread.counted.begin() + static_cast<ptrdiff_t>(same), thread.counted.end(), 0);
  if (!kept) return;
  for (size_t d = 0; d < n; ++d) {
    if (thread.counted[d]) continue;
    thread.counted[d] = 1;
    uint32_t key = now.keys[d];
    touch_key(key);
    Counts& k = key_counts_[key];
    ++k.nc;
    if (!now.recursive[d]) ++k.cc;
    if (d > 0) {
      uint32_t edge = now.edges[d];
      touch_edge(edge);
      Counts& e = edge_counts_[edge];
      ++e.nc;
      if (!now.edge_recursive[d]) ++e.cc;
    }
  }
}

namespace {

// A sample shows the stack at its time and stands for the time since its thread's previous
// sample (its weight). It belongs to the interval (span) its time lies in, and counts there for
// no more than the time since the span began: a sample taken just after a step began, by a
// sampler that was late, says nothing of what ran in the step before (build() gives that time
// to the previous sample's stack), and a step's functions never add up to more than the step's
// wall time per thread.
void for_each_in_spans(const store::SampleLog& log, const std::vector<TimeSpan>& spans,
                       const std::function<void(const store::SampleRecord&, int64_t weight_ns)>& fn) {
  for (const TimeSpan& span : spans) {
    log.for_each_sample(span.begin_ns, span.end_ns, [&](const store::SampleRecord& r) {
      // (span.begin_ns may be INT64_MIN: compare the sample's start with it, never subtract it.)
      const bool clipped = r.time_ns - std::max<int64_t>(r.weight_ns, 0) < span.begin_ns;
      fn(r, clipped ? r.time_ns - span.begin_ns : r.weight_ns);
    });
  }
}

}  // namespace

uint64_t StatsBuilder::kept_samples(const std::vector<TimeSpan>& spans, PythonTimer timer) {
  uint64_t kept = 0;
  for_each_in_spans(log_, spans, [&](const store::SampleRecord& r, int64_t) {
    if (r.stack != 0 && timer_keeps(timer, r) && !stack_info(r.stack).frames.empty()) ++kept;
  });
  return kept;
}

IntervalStats StatsBuilder::build(const std::vector<TimeSpan>& spans, PythonTimer timer,
                                  const std::vector<uint8_t>* only) {
  for (uint32_t key : key_order_) {
    for (uint32_t edge : key_callers_[key]) {
      edge_counts_[edge] = {};
      edge_touched_[edge] = 0;
    }
    key_callers_[key].clear();
    key_counts_[key] = {};
    key_touched_[key] = 0;
  }
  key_order_.clear();

  IntervalStats out;
  out.tree.emplace_back();
  std::vector<uint32_t> parent{0};
  std::unordered_map<uint64_t, uint32_t> child_of;   // (node, function) -> node
  std::unordered_map<uint32_t, uint32_t> node_of_stack;
  std::vector<ThreadState> threads(log_.threads().size());
  out.thread_seconds.assign(log_.threads().size(), 0.0);

  auto tree_node = [&](uint32_t stack, const StackInfo& info) {
    auto cached = node_of_stack.find(stack);
    if (cached != node_of_stack.end()) return cached->second;
    uint32_t node = 0;
    for (uint32_t frame : info.frames) {
      uint32_t function = log_.frames()[frame].function;
      uint64_t id = (uint64_t(node) << 32) | function;
      auto [it, inserted] = child_of.emplace(id, static_cast<uint32_t>(out.tree.size()));
      if (inserted) {
        out.tree[node].children.push_back(it->second);
        CallTreeNode child;
        child.function = function;
        out.tree.push_back(std::move(child));
        parent.push_back(node);
      }
      node = it->second;
    }
    node_of_stack.emplace(stack, node);
    return node;
  };

  // Time w of a kept sample's stack: its functions' own and total time, the call tree.
  auto credit = [&](uint32_t stack, const StackInfo& info, double w) {
    const size_t leaf = info.frames.size() - 1;
    touch_key(info.keys[leaf]);
    key_counts_[info.keys[leaf]].tt += w;
    if (leaf > 0) {
      touch_edge(info.edges[leaf]);
      edge_counts_[info.edges[leaf]].tt += w;
    }
    for (uint32_t key : info.distinct_keys) {
      touch_key(key);
      key_counts_[key].ct += w;
    }
    for (uint32_t edge : info.distinct_edges) {
      touch_edge(edge);
      edge_counts_[edge].ct += w;
    }
    out.tree[tree_node(stack, info)].self_s += w;
  };
  auto selected = [&](uint32_t thread) { return only == nullptr || (thread < only->size() && (*only)[thread]); };
  // Per thread, its last sample in the interval that the timer kept (0: none), and whether any.
  std::vector<uint32_t> held(log_.threads().size(), 0);
  std::vector<uint8_t> idle_held(log_.threads().size(), 0);

  for_each_in_spans(log_, spans, [&](const store::SampleRecord& r, int64_t weight_ns) {
    if (!selected(r.thread)) return;
    if (r.thread >= threads.size()) threads.resize(r.thread + 1);
    if (r.thread >= out.thread_seconds.size()) out.thread_seconds.resize(r.thread + 1, 0.0);
    if (r.thread >= held.size()) {
      held.resize(r.thread + 1, 0);
      idle_held.resize(r.thread + 1, 0);
    }
    const double w = static_cast<double>(weight_ns) / 1e9;
    if (!r.idle()) out.cpu_seconds += w;
    const bool kept = r.stack != 0 && timer_keeps(timer, r);
    observe(threads[r.thread], r.stack, kept);
    held[r.thread] = kept ? r.stack : 0;
    idle_held[r.thread] = r.idle() ? 1 : 0;
    if (!kept) return;
    const StackInfo& info = stack_info(r.stack);
    if (info.frames.empty()) return;
    ++out.samples;
    out.seconds += w;
    out.thread_seconds[r.thread] += w;
    credit(r.stack, info, w);
  });

  // A span's end falls inside each thread's next sample: the part before the end is the
  // interval's too, and what ran then is best told by the thread's last sample in the span
  // (the next one shows what ran after). So time is neither lost at a boundary nor given to
  // the stack of the interval after it.
  for (const TimeSpan& span : spans) {
    if (span.end_ns == INT64_MAX) continue;
    std::vector<uint8_t> done(log_.threads().size(), 0);
    const int64_t reach = span.end_ns > INT64_MAX - store::SampleLog::kMaxSampleReachNs
                              ? INT64_MAX
                              : span.end_ns + store::SampleLog::kMaxSampleReachNs;
    log_.for_each_sample(span.end_ns, reach, [&](const store::SampleRecord& r) {
      if (!selected(r.thread) || r.thread >= held.size() || r.thread >= done.size() || done[r.thread]) return;
      done[r.thread] = 1;
      const int64_t from = std::max(r.time_ns - std::max<int64_t>(r.weight_ns, 0), span.begin_ns);
      if (from >= span.end_ns || held[r.thread] == 0) return;
      const StackInfo& info = stack_info(held[r.thread]);
      if (info.frames.empty()) return;
      const double w = static_cast<double>(span.end_ns - from) / 1e9;
      if (!idle_held[r.thread]) out.cpu_seconds += w;
      out.seconds += w;
      out.thread_seconds[r.thread] += w;
      credit(held[r.thread], info, w);
    });
  }

  // Totals bottom-up: children always come after their parent.
  for (size_t i = out.tree.size(); i-- > 0;) {
    out.tree[i].time_s += out.tree[i].self_s;
    if (i > 0) out.tree[parent[i]].time_s += out.tree[i].time_s;
  }
  for (auto& node : out.tree) {
    std::stable_sort(node.children.begin(), node.children.end(),
                     [&](uint32_t a, uint32_t b) { return out.tree[a].time_s > out.tree[b].time_s; });
  }

  out.table.reserve(key_order_.size());
  for (uint32_t key : key_order_) {
    const Counts& k = key_counts_[key];
    store::FunctionStats& fs = out.table[keys_[key]];
    fs.cc = k.cc;
    fs.nc = k.nc;
    fs.tt = k.tt;
    fs.ct = k.ct;
    for (uint32_t edge : key_callers_[key]) {
      const Counts& e = edge_counts_[edge];
      store::CallerStats cs;
      cs.nc = e.nc;
      cs.cc = e.cc;
      cs.tt = e.tt;
      cs.ct = e.ct;
      fs.callers.emplace_back(keys_[edge_ends_[edge].first], cs);
    }
  }
  // pstats.Stats cannot load an empty dict, and smdebug's readers must see every interval: one
  // zero entry stands for "no sample kept" (pstats prints it as {sprof: no samples}).
  if (out.table.empty()) out.table[store::no_samples_function()] = store::FunctionStats{};
  return out;
}

IntervalStats build_interval_stats(const store::ProfileSamples& profile, const ProcessInterval& interval,
                                   PythonTimer timer) {
  StatsBuilder builder(profile.processes.at(interval.process).log);
  return builder.build(interval.spans, timer);
}

}  // namespace sprof::intervals
