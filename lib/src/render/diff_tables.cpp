// sprof diff's tables as cells (render/diff_format.hpp), for both of its pages.

#include <algorithm>
#include <cmath>

#include "render/diff_format.hpp"

namespace sprof::render {

DiffTable step_table(const report::ProfileDiff& diff) {
  DiffTable t{{"METRIC", "BASE", "NEW", "CHANGE", "INTERVAL", "P", "BASE P90", "NEW P90", "STEPS"}, {}, 0};
  for (const report::DistributionChange& d : diff.steps) {
    t.rows.push_back({{d.metric},
                      {seconds_text(d.base_median_s)},
                      {seconds_text(d.new_median_s)},
                      {fmt::format("{} ({})", signed_seconds(d.change_s), pct_text(d.change_pct)), trend_of(d.interval_s)},
                      {interval_text(d.interval_s)},
                      {d.p_value < 0.001 ? "<0.001" : fmt::format("{:.3f}", d.p_value)},
                      {seconds_text(d.base_p90_s)},
                      {seconds_text(d.new_p90_s)},
                      {fmt::format("{} / {}", d.base_count, d.new_count)}});
  }
  return t;
}

DiffTable function_table(const report::ProfileDiff& diff, bool total, size_t top) {
  std::vector<const report::FunctionChange*> rows;
  for (const report::FunctionChange& f : diff.functions) {  // by |self change| already
    if (total ? (f.base_total_s > 0 || f.new_total_s > 0) : (f.base_self_s > 0 || f.new_self_s > 0)) rows.push_back(&f);
  }
  if (total) {
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
      return std::abs(a->total_change_s) > std::abs(b->total_change_s);
    });
  }
  DiffTable t{{"CHANGE", "OF STEP", "INTERVAL", "BASE", "NEW", "FUNCTION"}, {}, rows.size() > top ? rows.size() - top : 0};
  const double step_s = diff.steps.empty() ? 0 : diff.steps.front().base_median_s;
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const report::FunctionChange& f = *rows[i];
    std::string name = f.name + " (" + f.file + ":" + std::to_string(f.line) + ")";
    if (!f.status.empty()) name += " [" + f.status + "]";
    const double change = total ? f.total_change_s : f.change_s;
    const report::ConfidenceInterval& ci = total ? f.total_interval_s : f.interval_s;
    t.rows.push_back({{signed_seconds(change), trend_of(ci)},
                      {pct_text(step_s > 0 ? change / step_s * 100 : 0)},
                      {interval_text(ci)},
                      {seconds_text(total ? f.base_total_s : f.base_self_s)},
                      {seconds_text(total ? f.new_total_s : f.new_self_s)},
                      {name}});
  }
  return t;
}

DiffTable kernel_table(const report::GpuDiff& gpu, size_t top) {
  DiffTable t{{"CHANGE", "OF KERNELS", "INTERVAL", "BASE", "NEW", "LAUNCHES/STEP", "KERNEL"},
              {},
              gpu.kernels.size() > top ? gpu.kernels.size() - top : 0};
  for (size_t i = 0; i < gpu.kernels.size() && i < top; ++i) {
    const report::KernelChange& k = gpu.kernels[i];
    t.rows.push_back({{signed_seconds(k.change_s), trend_of(k.interval_s)},
                      {pct_text(k.change_pct)},
                      {interval_text(k.interval_s)},
                      {seconds_text(k.base_s)},
                      {seconds_text(k.new_s)},
                      {fmt::format("{:.1f} → {:.1f}", k.base_count, k.new_count)},
                      {k.status.empty() ? k.name : k.name + " [" + k.status + "]"}});
  }
  return t;
}

}  // namespace sprof::render
