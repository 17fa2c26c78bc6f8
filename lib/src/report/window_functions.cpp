#include "report/window_functions.hpp"

#include "report/function_table.hpp"

namespace sprof::report {

void add_window_functions(const store::ProfileSamples& profile, const SampleFilter& filter, int64_t from_ns,
                          int64_t to_ns, FunctionTable& table) {
  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (filter.pid && log.pid() != *filter.pid) continue;
    if (log.sample_count() == 0 || log.last_ns() < from_ns) continue;
    FunctionTable::ByStack by_stack;
    const std::vector<bool> mask = filter.thread_mask(log);
    log.for_each_overlap(from_ns, to_ns, [&](const store::SampleRecord& r, int64_t overlap_ns) {
      if (filter.keeps(r, mask)) by_stack[r.stack].add(r, overlap_ns);
    });
    table.add(log, by_stack);
  }
}

WindowFunctions window_functions(const store::ProfileSamples& profile, const SampleFilter& filter, int64_t from_ns,
                                 int64_t to_ns, size_t top_n) {
  FunctionTable table;
  add_window_functions(profile, filter, from_ns, to_ns, table);
  WindowFunctions out;
  out.top = table.top(top_n);
  out.kept_s = table.seconds();
  out.kept_samples = table.samples();
  return out;
}

}  // namespace sprof::report
