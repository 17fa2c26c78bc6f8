#pragma once
// Samples one process: reads every Python thread's stack through pyframes and appends the tick
// to the process's sample log. Translation from the reader's code ids to log function ids is a
// vector lookup, so steady-state sampling does no string work and no allocation.

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sprof/pyframes.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_log.hpp"

namespace sprof::sampler {

class ProcessSampler {
 public:
  explicit ProcessSampler(std::unique_ptr<store::SampleLogWriter> log);

  // (Re)attach: after an exec the process is a new interpreter with new code ids.
  void attach(std::unique_ptr<pyframes::PythonProcess> process, const store::LogProcess& info);
  void detach();
  bool attached() const { return process_ != nullptr; }
  const pyframes::PythonProcess* process() const { return process_.get(); }

  // One tick. `fallback_weight_ns`, cut to the time since the attach, weighs the first sample
  // after (re)attaching; later samples weigh the time since this process's previous sample. An
  // error means the process went away or changed under us; torn stacks are not errors, they are
  // counted as invalid.
  Status sample(int64_t now_ns, int64_t fallback_weight_ns, const pyframes::SampleOptions& options);

  // Between ticks: read the names of threads seen for the first time.
  void housekeeping(int64_t now_ns);

  store::SampleLogWriter& log() { return *log_; }
  uint64_t samples() const { return samples_; }
  uint64_t invalid() const { return invalid_; }
  // What reading the stacks cost since the sampler was made (every process it attached).
  const pyframes::ReadStats& read_stats() const { return stats_; }
  uint32_t threads() const { return uint32_t(threads_.size()); }

 private:
  struct ThreadSlot {
    uint32_t slot = 0;
    uint64_t python_thread_id = 0;
    int name_attempts = 0;
    int64_t next_name_try_ns = 0;
    bool named = false;
  };
  uint32_t function_for(uint32_t code_id);

  std::unique_ptr<store::SampleLogWriter> log_;
  std::unique_ptr<pyframes::PythonProcess> process_;
  std::vector<uint32_t> code_to_function_;  // code id -> function id + 1 (0: not yet seen)
  std::unordered_map<uint64_t, ThreadSlot> threads_;  // key: python thread id ^ native tid
  std::vector<pyframes::ThreadStack> stacks_;
  std::vector<uint32_t> frame_ids_;
  pyframes::ReadStats stats_;
  int64_t last_sample_ns_ = 0;
  int64_t attach_ns_ = 0;  // of the last attach (CLOCK_MONOTONIC)
  uint64_t samples_ = 0;
  uint64_t invalid_ = 0;
  size_t unnamed_ = 0;
};

}  // namespace sprof::sampler
