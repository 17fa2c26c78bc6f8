#include "report/window_functions.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace sprof::report {

WindowFunctions window_functions(const store::ProfileSamples& profile, const SampleFilter& filter, int64_t from_ns,
                                 int64_t to_ns, size_t top_n) {
  WindowFunctions out;
  using Key = std::tuple<std::string, std::string, int32_t>;  // file, name, first line
  std::map<Key, FunctionTime> functions;
  std::vector<uint32_t> frames;
  std::vector<uint32_t> seen;
  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (filter.pid && log.pid() != *filter.pid) continue;
    if (log.sample_count() == 0 || log.last_ns() < from_ns || log.first_ns() >= to_ns) continue;
    std::unordered_map<uint32_t, std::pair<uint64_t, int64_t>> by_stack;  // samples, weight
    log.for_each_sample(from_ns, to_ns, [&](const store::SampleRecord& r) {
      if (!filter.keeps(r)) return;
      auto& agg = by_stack[r.stack];
      ++agg.first;
      agg.second += r.weight_ns;
    });
    for (const auto& [stack, agg] : by_stack) {
      double seconds = static_cast<double>(agg.second) / 1e9;
      out.kept_samples += agg.first;
      out.kept_s += seconds;
      log.stack_frames(stack, frames);
      seen.clear();
      for (size_t i = 0; i < frames.size(); ++i) {
        uint32_t fn = log.frames()[frames[i]].function;
        const store::LogFunction& f = log.functions()[fn];
        FunctionTime& t = functions[Key{f.file, f.name, f.first_line}];
        if (i == 0) {
          t.self_s += seconds;
          t.self_samples += agg.first;
        }
        if (std::find(seen.begin(), seen.end(), fn) == seen.end()) {
          seen.push_back(fn);
          t.total_s += seconds;
        }
      }
    }
  }
  for (auto& [key, t] : functions) {
    if (t.self_samples == 0) continue;
    t.file = std::get<0>(key);
    t.name = std::get<1>(key);
    t.first_line = std::get<2>(key);
    out.top.push_back(std::move(t));
  }
  std::sort(out.top.begin(), out.top.end(), [](const FunctionTime& a, const FunctionTime& b) {
    if (a.self_s != b.self_s) return a.self_s > b.self_s;
    return std::tie(a.file, a.name, a.first_line) < std::tie(b.file, b.name, b.first_line);
  });
  if (out.top.size() > top_n) out.top.resize(top_n);
  return out;
}

}  // namespace sprof::report
