#pragma once
// Ties GPU work to the CUDA call that launched it, for the GPU views.

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sprof/gpu_trace.hpp"

namespace sprof::report {

// Launch calls by (process, correlation id). CUPTI's ids are unique within a process, but merged
// or edited traces may repeat them: an op is then tied to the latest call with its id that began
// before it (the nearest launch), never to one far away.
class LaunchCalls {
 public:
  explicit LaunchCalls(const store::GpuTrace& trace) {
    for (const store::GpuApiCall& call : trace.api_calls) {  // sorted by start: so is each list
      if (call.correlation != 0) by_key_[key(call.pid, call.correlation)].push_back(&call);
    }
  }
  const store::GpuApiCall* of(const store::GpuOp& op) const {
    if (op.correlation == 0) return nullptr;
    auto it = by_key_.find(key(op.pid, op.correlation));
    if (it == by_key_.end()) return nullptr;
    const auto& calls = it->second;
    auto after = std::upper_bound(calls.begin(), calls.end(), op.start_ns,
                                  [](int64_t t, const store::GpuApiCall* c) { return t < c->start_ns; });
    return after == calls.begin() ? calls.front() : *(after - 1);
  }
  int64_t duplicated() const {
    int64_t n = 0;
    for (const auto& [k, calls] : by_key_) n += int64_t(calls.size()) - 1;
    return n;
  }

 private:
  struct Hash {
    size_t operator()(const std::pair<int32_t, int64_t>& k) const {
      return std::hash<int64_t>()(k.second) * 31 + std::hash<int32_t>()(k.first);
    }
  };
  static std::pair<int32_t, int64_t> key(int32_t pid, int64_t correlation) { return {pid, correlation}; }
  std::unordered_map<std::pair<int32_t, int64_t>, std::vector<const store::GpuApiCall*>, Hash> by_key_;
};

}  // namespace sprof::report
