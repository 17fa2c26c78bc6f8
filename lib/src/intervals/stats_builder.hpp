#pragma once
// Turns one process's samples into pstats tables and call trees, interval by interval. The
// per-stack facts (function labels, recursion, caller edges) are worked out once per stack and
// kept across the intervals of the process.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sprof/interval_stats.hpp"

namespace sprof::intervals {

class StatsBuilder {
 public:
  explicit StatsBuilder(const store::SampleLog& log);

  // Statistics of the samples in `spans` that `timer` keeps; with `threads`, only of the threads
  // (indexes into SampleLog::threads()) it marks.
  IntervalStats build(const std::vector<TimeSpan>& spans, PythonTimer timer,
                      const std::vector<uint8_t>* threads = nullptr);
  // Just how many of them build() would count (IntervalStats::samples), without building.
  uint64_t kept_samples(const std::vector<TimeSpan>& spans, PythonTimer timer);

 private:
  struct StackInfo {
    bool ready = false;
    std::vector<uint32_t> frames;      // root first
    std::vector<uint32_t> keys;        // function label per depth
    std::vector<uint32_t> edges;       // caller edge per depth (depth 0: none)
    std::vector<uint8_t> recursive;    // the label is already further up the stack
    std::vector<uint8_t> edge_recursive;  // the same caller edge is already further up
    std::vector<uint32_t> distinct_keys;
    std::vector<uint32_t> distinct_edges;
  };
  struct Counts {
    int64_t nc = 0;
    int64_t cc = 0;
    double tt = 0;
    double ct = 0;
  };
  struct ThreadState {
    uint32_t stack = 0;
    std::vector<uint8_t> counted;  // per depth: this call was counted in the interval
  };

  const StackInfo& stack_info(uint32_t stack);
  uint32_t key_of(uint32_t function);
  uint32_t edge_of(uint32_t caller, uint32_t callee);
  void touch_key(uint32_t key);
  void touch_edge(uint32_t edge);
  void observe(ThreadState& thread, uint32_t stack, bool kept);

  const store::SampleLog& log_;
  std::vector<StackInfo> stacks_;
  std::vector<uint32_t> key_of_function_;  // UINT32_MAX: not labelled yet
  std::vector<store::FunctionKey> keys_;
  std::unordered_map<store::FunctionKey, uint32_t, store::FunctionKeyHash> key_index_;
  std::vector<std::pair<uint32_t, uint32_t>> edge_ends_;  // (caller, callee)
  std::unordered_map<uint64_t, uint32_t> edge_index_;
  std::vector<uint32_t> scratch_;

  // Per interval (reset by build()).
  std::vector<Counts> key_counts_;
  std::vector<Counts> edge_counts_;
  std::vector<uint8_t> key_touched_;
  std::vector<uint8_t> edge_touched_;
  std::vector<uint32_t> key_order_;                // labels in first-seen order
  std::vector<std::vector<uint32_t>> key_callers_; // per callee: its edges in first-seen order
};

}  // namespace sprof::intervals
