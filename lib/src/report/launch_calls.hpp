#pragma once
// Ties GPU work to the CUDA call that launched it, for the GPU views.

#include <algorithm>
#include <cstdint>
#include <climits>
#include <tuple>
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
    calls_.reserve(trace.api_calls.size());
    for (const store::GpuApiCall& call : trace.api_calls) {
      if (call.correlation != 0) calls_.push_back({call.pid, call.correlation, call.start_ns, &call});
    }
    std::sort(calls_.begin(), calls_.end());
  }
  const store::GpuApiCall* of(const store::GpuOp& op) const {
    if (op.correlation == 0) return nullptr;
    // The calls with this id: the latest that began by the op's start, else the first.
    Entry key{op.pid, op.correlation, op.start_ns, nullptr};
    auto lo = std::lower_bound(calls_.begin(), calls_.end(), Entry{op.pid, op.correlation, INT64_MIN, nullptr});
    if (lo == calls_.end() || lo->pid != op.pid || lo->correlation != op.correlation) return nullptr;
    auto after = std::upper_bound(lo, calls_.end(), key, [](const Entry& a, const Entry& b) {
      return std::tie(a.pid, a.correlation, a.start_ns) < std::tie(b.pid, b.correlation, b.start_ns);
    });
    return after == lo ? lo->call : (after - 1)->call;
  }
  int64_t duplicated() const {
    int64_t n = 0;
    for (size_t i = 1; i < calls_.size(); ++i) {
      if (calls_[i].pid == calls_[i - 1].pid && calls_[i].correlation == calls_[i - 1].correlation) ++n;
    }
    return n;
  }

 private:
  struct Entry {
    int32_t pid;
    int64_t correlation;
    int64_t start_ns;
    const store::GpuApiCall* call;
    bool operator<(const Entry& o) const {
      return std::tie(pid, correlation, start_ns) < std::tie(o.pid, o.correlation, o.start_ns);
    }
  };
  std::vector<Entry> calls_;  // by (pid, correlation, start)
};

}  // namespace sprof::report
