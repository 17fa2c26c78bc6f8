#include "sampler/process_sampler.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace sprof::sampler {

namespace {
// Thread names come from threading._active, which a brand-new thread may not be in yet (it is
// added by the thread itself once it runs: later under load). Retries come soon and then back off
// (20 ms, 40 ms, ... 1.28 s): a first retry half a second on left a thread seen at its start and
// gone, or the recording over, before it (test_trace_engine's "loader" thread, once under load).
constexpr int kNameAttempts = 8;
constexpr int64_t kFirstNameRetryNs = 20'000'000;

uint64_t thread_key(uint64_t python_thread_id, int32_t native_tid) {
  return python_thread_id ^ (uint64_t(uint32_t(native_tid)) * 0x9E3779B97F4A7C15ull);
}
}  // namespace

ProcessSampler::ProcessSampler(std::unique_ptr<store::SampleLogWriter> log) : log_(std::move(log)) {
  stacks_.reserve(16);
  frame_ids_.reserve(256);
}

void ProcessSampler::attach(std::unique_ptr<pyframes::PythonProcess> process, const store::LogProcess& info) {
  process_ = std::move(process);
  code_to_function_.clear();
  last_sample_ns_ = 0;
  attach_ns_ = info.attach_ns;
  log_->add_process(info);
}

void ProcessSampler::detach() { process_.reset(); }

uint32_t ProcessSampler::function_for(uint32_t code_id) {
  if (code_id >= code_to_function_.size()) code_to_function_.resize(size_t(code_id) + 64, 0);
  uint32_t& cached = code_to_function_[code_id];
  if (cached == 0) {
    const pyframes::CodeInfo& code = process_->code(code_id);
    cached = log_->function(code.filename, code.name, code.first_line) + 1;
  }
  return cached - 1;
}

Status ProcessSampler::sample(int64_t now_ns, int64_t fallback_weight_ns, const pyframes::SampleOptions& options) {
  if (!process_) return make_error(ErrorKind::runtime, "process is not attached");
  uint64_t invalid_before = stats_.invalid;
  SPROF_TRY_STATUS(process_->sample(options, stacks_, stats_));
  uint64_t invalid = stats_.invalid - invalid_before;
  if (invalid > 0) {
    invalid_ += invalid;
    log_->add_invalid(invalid);
  }

  // The first sample after attaching stands for no time before the attach: nothing was seen
  // then, and the queries' wall time starts there.
  int64_t weight = last_sample_ns_ > 0 ? now_ns - last_sample_ns_
                   : attach_ns_ > 0    ? std::min(fallback_weight_ns, std::max<int64_t>(now_ns - attach_ns_, 0))
                                       : fallback_weight_ns;
  last_sample_ns_ = now_ns;
  log_->begin_tick(now_ns, weight);
  for (const pyframes::ThreadStack& thread : stacks_) {
    // A thread state not yet bound to an OS thread (threading.Thread.start() in progress).
    if (thread.python_thread_id == 0) continue;
    uint64_t key = thread_key(thread.python_thread_id, thread.native_tid);
    auto it = threads_.find(key);
    if (it == threads_.end()) {
      ThreadSlot slot;
      slot.slot = log_->thread(thread.python_thread_id, thread.native_tid);
      slot.python_thread_id = thread.python_thread_id;
      it = threads_.emplace(key, slot).first;
      ++unnamed_;
    }
    frame_ids_.clear();
    for (const pyframes::Frame& frame : thread.frames) {
      frame_ids_.push_back(log_->frame(function_for(frame.code_id), frame.line));
    }
    uint8_t flags = (thread.on_cpu ? 0 : store::kSampleIdle) | (thread.holds_gil ? store::kSampleGil : 0);
    log_->add_sample(it->second.slot, log_->stack(frame_ids_), flags);
    ++samples_;
  }
  return log_->end_tick();
}

void ProcessSampler::housekeeping(int64_t now_ns) {
  if (unnamed_ == 0 || !process_) return;
  for (auto& [key, slot] : threads_) {
    if (slot.named || slot.name_attempts >= kNameAttempts || now_ns < slot.next_name_try_ns) continue;
    auto name = process_->thread_name(slot.python_thread_id);
    ++slot.name_attempts;
    slot.next_name_try_ns = now_ns + (kFirstNameRetryNs << (slot.name_attempts - 1));
    if (name && !name->empty()) {
      log_->set_thread_name(slot.slot, *name);
      slot.named = true;
    }
    if (slot.named || slot.name_attempts >= kNameAttempts) --unnamed_;
  }
}

}  // namespace sprof::sampler
