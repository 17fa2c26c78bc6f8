// GPUMemoryIncrease (smdebug/profiler/analysis/rules/gpu_memory_increase.py): the moving average of
// a GPU's memory utilization jumps by more than `increase` percentage points from one sample to the
// next. Counted per sample.
//
// smdebug compares mean(v[n-w:n]) with mean(v[n-w-1:n-2]), a slice one value short (bug); sprof
// compares it with the previous sample's moving average mean(v[n-w-1:n-1]); --compat smdebug keeps
// the original slice.

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/ordered_map.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

class GpuMemoryIncrease : public Rule {
 public:
  GpuMemoryIncrease(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {
    increase_ = params.number("increase");
    patience_ = params.integer("patience");
    window_ = params.integer("window");
  }

  void on_window(const Window& window) override {
    const size_t w = static_cast<size_t>(window_);
    for (const store::SystemMetric* m : window.system) {
      if (m->dimension != "GPUMemoryUtilization") continue;
      auto& values = values_[m->node_id][m->name];
      values.push_back(m->value);
      const size_t n = values.size();
      datapoints_ = static_cast<int64_t>(n);
      if (n <= w + 1) continue;
      if (compat_ && w == 1) continue;  // smdebug's slice is empty: its mean is NaN, no comparison holds
      std::span<const double> all(values);
      double current = mean(all.subspan(n - w, w));
      double previous = compat_ ? mean(all.subspan(n - w - 1, w - 1)) : mean(all.subspan(n - w - 1, w));
      double diff = current - previous;
      if (diff > increase_ && static_cast<int64_t>(n) > patience_) {
        ++violations_;
        ++triggered_;
        // Details describe the series as it was at the latest trigger; computed once at the end.
        Trigger& t = triggers_[m->node_id][m->name];
        t.diff = diff;
        t.length = n;
        t.count += 1;
        last_timestamp_ = window.start_us;
      }
    }
  }

  void finish() override {
    bool first_node = true;
    for (const auto& [node, gpus] : triggers_) {
      Json node_details = Json::object();
      for (const auto& [gpu, t] : gpus) {
        const auto& values = *values_.find(node)->find(gpu);
        std::span<const double> seen(values.data(), t.length);
        BoxStats box = box_stats(seen);
        Json entry = Json::object();
        entry["increase"] = t.diff;
        entry["gpu_max"] = box.max;
        entry["p05"] = quantile(seen, 0.05);
        append_box(entry, box, box.p25);
        node_details[gpu] = std::move(entry);
      }
      details_[node] = std::move(node_details);
      if (first_node) details_["last_timestamp"] = last_timestamp_;  // smdebug's key order
      first_node = false;
    }
  }

  std::string rule_parameters() const override {
    return fmt::format("increase:{}\npatience:{}\nwindow:{}", params_.str("increase"), params_.str("patience"),
                       params_.str("window"));
  }

  std::string evidence() const override {
    if (triggers_.empty()) {
      double max_seen = 0;
      for (const auto& [node, gpus] : values_) {
        for (const auto& [gpu, values] : gpus) {
          for (double v : values) max_seen = std::max(max_seen, v);
        }
      }
      return fmt::format("no jump above {} points in the {}-sample moving average (memory peaked at {}%)",
                         params_.str("increase"), params_.str("window"), format_number(max_seen));
    }
    std::string text;
    for (const auto& [node, gpus] : triggers_) {
      for (const auto& [gpu, t] : gpus) {
        if (!text.empty()) text += "; ";
        text += fmt::format("{}/{}: {} sample(s) with the moving average up more than {} points (last +{:.1f})", machine(node),
                            gpu, t.count, params_.str("increase"), t.diff);
      }
    }
    return text;
  }

 private:
  struct Trigger {
    double diff = 0;
    size_t length = 0;
    int64_t count = 0;
  };
  Params params_;
  bool compat_;
  double increase_;
  int64_t patience_, window_;
  int64_t last_timestamp_ = 0;
  OrderedMap<std::string, OrderedMap<std::string, std::vector<double>>> values_;
  OrderedMap<std::string, OrderedMap<std::string, Trigger>> triggers_;
};

}  // namespace

RuleDef gpu_memory_increase_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "GPUMemoryIncrease",
      "The moving average of a GPU's memory utilization rises by more than `increase` percentage points from one "
      "sample to the next.",
      "Check for a memory leak or a growing footprint; if memory approaches the limit, use an instance with more GPU "
      "memory.",
      {{"increase", ParamKind::positive, "5", "rise of the moving average (percentage points)"},
       {"patience", ParamKind::count, "1000", "values to collect per GPU before the first check"},
       {"window", ParamKind::count, "10", "length of the moving average"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<GpuMemoryIncrease>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (!has_dimension(input, "GPUMemoryUtilization")) return "no GPU memory metrics (CPU-only job)";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
