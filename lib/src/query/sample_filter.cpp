// Restricting the sample views to time windows (the intervals a query selected).

#include <algorithm>

#include "sprof/sample_filter.hpp"

namespace sprof::query {

bool SampleFilter::keeps_process(int32_t process_pid) const {
  if (pid && process_pid != *pid) return false;
  if (!windows) return true;
  return std::any_of(windows->begin(), windows->end(), [&](const SampleWindow& w) { return w.pid == process_pid; });
}

std::vector<bool> SampleFilter::thread_mask(const store::SampleLog& log) const {
  if (!threads) return {};
  auto it = threads->find(log.pid());
  if (it == threads->end()) return {};
  std::vector<bool> mask(log.threads().size(), false);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = it->second.contains(log.threads()[i].native_tid);
  return mask;
}

std::map<int32_t, std::set<int32_t>> step_threads(const timeline::StepTimeline& steps,
                                                  const std::vector<const store::SampleLog*>& logs) {
  std::map<int32_t, std::set<int32_t>> out;
  for (const timeline::ProcessTimeline& p : steps.processes) {
    for (const timeline::Step& s : p.steps) {
      if (s.tid != 0) out[p.pid].insert(s.tid);
    }
  }
  const bool any_steps = !out.empty();
  for (const store::SampleLog* log : logs) {
    if (out.contains(log->pid())) continue;
    if (any_steps) {
      out[log->pid()];  // a process that ran no step (a DataLoader worker) is not the loop
      continue;
    }
    for (const auto& t : log->threads()) {
      if (t.native_tid == log->pid()) out[log->pid()].insert(t.native_tid);
    }
  }
  return out;
}

std::vector<SampleWindow> step_windows(const timeline::StepTimeline& steps, std::optional<Mode> mode,
                                       std::optional<int64_t> first, std::optional<int64_t> last) {
  std::vector<SampleWindow> out;
  for (const timeline::ProcessTimeline& p : steps.processes) {
    const size_t from = out.size();
    for (const timeline::Step& s : p.steps) {
      if (mode && s.mode != *mode) continue;
      if ((first && s.step < *first) || (last && s.step > *last)) continue;
      out.push_back({p.pid, s.begin_ns, s.end_ns});
    }
    // Steps of one process run one after the other, but a step cut at the next may touch it.
    std::sort(out.begin() + static_cast<long>(from), out.end(),
              [](const SampleWindow& a, const SampleWindow& b) { return a.begin_ns < b.begin_ns; });
    size_t kept = from;
    for (size_t i = from; i < out.size(); ++i) {
      if (kept > from && out[i].begin_ns <= out[kept - 1].end_ns) {
        out[kept - 1].end_ns = std::max(out[kept - 1].end_ns, out[i].end_ns);
      } else {
        out[kept++] = out[i];
      }
    }
    out.resize(kept);
  }
  std::stable_sort(out.begin(), out.end(), [](const SampleWindow& a, const SampleWindow& b) { return a.pid < b.pid; });
  return out;
}

std::vector<SampleWindow> time_windows(const std::vector<int32_t>& pids, int64_t begin_ns, int64_t end_ns) {
  std::vector<SampleWindow> out;
  for (int32_t pid : pids) out.push_back({pid, begin_ns, end_ns});
  std::sort(out.begin(), out.end(), [](const SampleWindow& a, const SampleWindow& b) { return a.pid < b.pid; });
  out.erase(std::unique(out.begin(), out.end(), [](const SampleWindow& a, const SampleWindow& b) { return a.pid == b.pid; }),
            out.end());
  return out;
}

void for_each_window_sample(const SampleFilter& filter, const store::SampleLog& log,
                            const std::function<void(const store::SampleRecord&)>& fn) {
  if (!filter.windows) {
    log.for_each_sample(fn);
    return;
  }
  for (const SampleWindow& w : *filter.windows) {
    if (w.pid == log.pid()) log.for_each_sample(w.begin_ns, w.end_ns, fn);
  }
}

}  // namespace sprof::query
