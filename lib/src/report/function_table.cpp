#include "report/function_table.hpp"

#include <algorithm>

namespace sprof::report {

void FunctionTable::add(const store::SampleLog& log, const ByStack& by_stack) {
  for (const auto& [stack, agg] : by_stack) {
    double seconds = static_cast<double>(agg.weight_ns) / 1e9;
    samples_ += agg.samples;
    seconds_ += seconds;
    log.stack_frames(stack, frames_);
    seen_.clear();
    for (size_t i = 0; i < frames_.size(); ++i) {
      uint32_t fn = log.frames()[frames_[i]].function;
      const store::LogFunction& f = log.functions()[fn];
      FunctionTime& t = functions_[Key{f.file, f.name, f.first_line}];
      if (i == 0) {
        t.self_s += seconds;
        t.waiting_s += static_cast<double>(agg.waiting_ns) / 1e9;
        t.self_samples += agg.samples;
      }
      if (std::find(seen_.begin(), seen_.end(), fn) == seen_.end()) {  // recursion counts once
        seen_.push_back(fn);
        t.total_s += seconds;
      }
    }
  }
}

std::vector<FunctionTime> FunctionTable::top(size_t n) const {
  std::vector<FunctionTime> out;
  for (const auto& [key, t] : functions_) {
    if (t.self_samples == 0) continue;
    FunctionTime& f = out.emplace_back(t);
    f.file = std::get<0>(key);
    f.name = std::get<1>(key);
    f.first_line = std::get<2>(key);
  }
  std::sort(out.begin(), out.end(), [](const FunctionTime& a, const FunctionTime& b) {
    if (a.self_s != b.self_s) return a.self_s > b.self_s;
    return std::tie(a.file, a.name, a.first_line) < std::tie(b.file, b.name, b.first_line);
  });
  if (out.size() > n) out.resize(n);
  return out;
}

void FunctionTable::merge(const FunctionTable& other) {
  for (const auto& [key, t] : other.functions_) {
    FunctionTime& mine = functions_[key];
    mine.self_s += t.self_s;
    mine.waiting_s += t.waiting_s;
    mine.total_s += t.total_s;
    mine.self_samples += t.self_samples;
  }
  samples_ += other.samples_;
  seconds_ += other.seconds_;
}

}  // namespace sprof::report
