// LowGPUUtilization (smdebug/profiler/analysis/rules/low_gpu_utilization.py): each GPU either
// under-used (p95 below threshold_p95) or fluctuating (p95 above threshold_p95 and p5 below
// threshold_p5) over its last `window` values.

#include <algorithm>

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/ordered_map.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

class LowGpuUtilization : public Rule {
 public:
  explicit LowGpuUtilization(const Params& params) : params_(params) {
    threshold_p95_ = params.number("threshold_p95");
    threshold_p5_ = params.number("threshold_p5");
    window_ = params.integer("window");
    patience_ = params.integer("patience");
  }

  void on_window(const Window& window) override {
    for (const store::SystemMetric* m : window.system) {
      if (m->dimension == "GPUUtilization") values_[m->node_id][m->name].push_back(m->value);
    }
    for (auto& [node, gpus] : values_) {
      for (auto& [gpu, values] : gpus) {
        datapoints_ = static_cast<int64_t>(values.size());
        if (static_cast<int64_t>(values.size()) <= patience_) continue;
        std::span<const double> all(values);
        auto recent = all.subspan(values.size() - std::min<size_t>(values.size(), window_));
        double p95 = quantile(recent, 0.95);
        double p5 = quantile(recent, 0.05);
        if (p95 < threshold_p95_) {
          record(node, gpu, values, recent, window.start_us, fmt::format("p95 {}% < {}%", format_number(p95),
                                                                         params_.str("threshold_p95")));
        } else if (p95 > threshold_p95_ && p5 < threshold_p5_) {
          record(node, gpu, values, recent, window.start_us,
                 fmt::format("fluctuating: p95 {}%, p5 {}% < {}%", format_number(p95), format_number(p5),
                             params_.str("threshold_p5")));
        }
      }
    }
  }

  std::string rule_parameters() const override {
    return fmt::format("threshold_p95:{}\nthreshold_p5:{}\nwindow:{}\npatience:{}", params_.str("threshold_p95"),
                       params_.str("threshold_p5"), params_.str("window"), params_.str("patience"));
  }

  std::string evidence() const override {
    if (violations_per_gpu_.empty()) {
      size_t gpus = 0, most = 0;
      for (const auto& [node, g] : values_) {
        gpus += g.size();
        for (const auto& [gpu, values] : g) most = std::max(most, values.size());
      }
      if (static_cast<int64_t>(most) <= patience_) {
        return fmt::format("{} GPU(s) with at most {} samples each; more than {} (patience) are needed", gpus, most,
                           params_.str("patience"));
      }
      return fmt::format("{} GPU(s) well used over their last {} samples", gpus, params_.str("window"));
    }
    std::string text;
    for (const auto& [key, found] : violations_per_gpu_) {
      if (!text.empty()) text += "; ";
      text += fmt::format("{} {}x ({})", key, found.count, found.last);
    }
    return text;
  }

 private:
  void record(const std::string& node, const std::string& gpu, const std::vector<double>& values,
              std::span<const double> recent, int64_t window_start, std::string why) {
    ++triggered_;
    ++violations_;
    datapoints_ = static_cast<int64_t>(values.size());
    BoxStats box = box_stats(values);
    Json entry = Json::object();
    entry["gpu_max"] = box.max;
    entry["gpu_95"] = quantile(recent, 0.95);
    entry["gpu_5"] = quantile(recent, 0.05);
    append_box(entry, box, box.p25);
    details_[node][gpu] = std::move(entry);
    details_["last_timestamp"] = window_start;
    auto& found = violations_per_gpu_[machine(node) + "/" + gpu];
    found.count += 1;
    found.last = std::move(why);
  }

  Params params_;
  double threshold_p95_, threshold_p5_;
  int64_t window_, patience_;
  OrderedMap<std::string, OrderedMap<std::string, std::vector<double>>> values_;
  struct Found {
    int64_t count = 0;
    std::string last;
  };
  OrderedMap<std::string, Found> violations_per_gpu_;
};

}  // namespace

RuleDef low_gpu_utilization_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "LowGPUUtilization",
      "A GPU is under-used (95th percentile of its utilization below threshold_p95) or fluctuates (95th "
      "percentile above threshold_p95 while the 5th is below threshold_p5).",
      "Look for bottlenecks and blocking calls, consider another distribution strategy or a larger batch size, or "
      "a smaller instance type.",
      {{"threshold_p95", ParamKind::percent, "70", "95th-percentile utilization (%) below which a GPU is under-used"},
       {"threshold_p5", ParamKind::percent, "10", "5th-percentile utilization (%) below which a GPU fluctuates"},
       {"window", ParamKind::count, "500", "number of latest values the percentiles are taken over"},
       {"patience", ParamKind::count, "1000", "values to collect per GPU before the first check"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext&) { return std::make_unique<LowGpuUtilization>(params); };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (!has_dimension(input, "GPUUtilization")) return "no GPU metrics (CPU-only job)";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
