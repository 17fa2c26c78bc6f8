// record's end-of-run summary: totals and the functions with the most self time.

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "sprof/sample_report.hpp"

namespace sprof::report {

SampleSummary summarize(const store::ProfileSamples& profile, const SampleFilter& filter, size_t top_n) {
  SampleSummary s;
  using Key = std::tuple<std::string, std::string, int32_t>;  // file, name, first line
  std::map<Key, FunctionTime> functions;
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<uint32_t> frames;
  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (filter.pid && log.pid() != *filter.pid) continue;
    s.invalid += log.invalid_count();
    if (log.sample_count() > 0) ++s.processes;
    s.threads += log.threads().size();
    // Aggregate by stack first: far fewer stacks than samples.
    std::unordered_map<uint32_t, std::pair<uint64_t, int64_t>> by_stack;
    log.for_each_sample([&](const store::SampleRecord& r) {
      ++s.samples;
      first = std::min(first, r.time_ns);
      last = std::max(last, r.time_ns);
      if (r.idle()) ++s.idle_samples;
      if (!filter.keeps(r)) return;
      auto& agg = by_stack[r.stack];
      ++agg.first;
      agg.second += r.weight_ns;
    });
    std::vector<uint32_t> seen;
    for (const auto& [stack, agg] : by_stack) {
      s.kept_samples += agg.first;
      s.kept_s += double(agg.second) / 1e9;
      log.stack_frames(stack, frames);
      seen.clear();
      for (size_t i = 0; i < frames.size(); ++i) {
        uint32_t fn = log.frames()[frames[i]].function;
        const store::LogFunction& f = log.functions()[fn];
        FunctionTime& t = functions[Key{f.file, f.name, f.first_line}];
        if (i == 0) {
          t.self_s += double(agg.second) / 1e9;
          t.self_samples += agg.first;
        }
        if (std::find(seen.begin(), seen.end(), fn) == seen.end()) {
          seen.push_back(fn);
          t.total_s += double(agg.second) / 1e9;
        }
      }
    }
  }
  if (s.samples > 0) s.duration_s = double(last - first) / 1e9;
  uint64_t attempted = s.samples + s.invalid;
  s.invalid_share = attempted == 0 ? 0.0 : double(s.invalid) / double(attempted);
  for (auto& [key, t] : functions) {
    t.file = std::get<0>(key);
    t.name = std::get<1>(key);
    t.first_line = std::get<2>(key);
    if (t.self_samples > 0) s.top.push_back(t);
  }
  std::sort(s.top.begin(), s.top.end(), [](const FunctionTime& a, const FunctionTime& b) {
    if (a.self_s != b.self_s) return a.self_s > b.self_s;
    return std::tie(a.file, a.name, a.first_line) < std::tie(b.file, b.name, b.first_line);
  });
  if (s.top.size() > top_n) s.top.resize(top_n);
  return s;
}

}  // namespace sprof::report
