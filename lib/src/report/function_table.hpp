#pragma once
// Self and total time per function over stacks of sampled frames, shared by record's summary and
// analyze's per-window tables.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sprof/sample_log.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::report {

class FunctionTable {
 public:
  struct StackWeight {
    uint64_t samples = 0;
    int64_t weight_ns = 0;
    int64_t waiting_ns = 0;  // of it, from idle samples (the thread was off-CPU)
    void add(const store::SampleRecord& r, int64_t ns) {
      ++samples;
      weight_ns += ns;
      if (r.idle()) waiting_ns += ns;
    }
  };
  // Samples of one log aggregated by stack id first: far fewer stacks than samples.
  using ByStack = std::unordered_map<uint32_t, StackWeight>;

  // Adds one log's stacks: self time to each stack's leaf, total time once to every function on it.
  void add(const store::SampleLog& log, const ByStack& by_stack);

  // The functions with any self time, by self time descending (then file, name, line), at most n.
  std::vector<FunctionTime> top(size_t n) const;

  // Adds another table (of another profile: a job's nodes) function by function.
  void merge(const FunctionTable& other);

  uint64_t samples() const { return samples_; }
  double seconds() const { return seconds_; }

 private:
  using Key = std::tuple<std::string, std::string, int32_t>;  // file, name, first line
  std::map<Key, FunctionTime> functions_;
  std::vector<uint32_t> frames_;
  std::vector<uint32_t> seen_;
  uint64_t samples_ = 0;
  double seconds_ = 0;
};

// summarize() (sprof/sample_report.hpp) with the functions added into `table` instead of listed.
SampleSummary summarize_into(const store::ProfileSamples& profile, const SampleFilter& filter, FunctionTable& table);

}  // namespace sprof::report
