// LoadBalancing (smdebug/profiler/analysis/rules/load_balancing.py): GPUs of one node have
// different utilization histograms (Jensen–Shannon distance above `threshold`).
//
// smdebug's pair loop is mis-nested so it only ever compares the last GPU with itself (it never
// fires), and its bins np.arange(0, 100, 2) drop values above 98 %. sprof compares every pair of GPUs
// of a node over 50 bins of 2 % covering [0, 100]; --compat smdebug keeps both quirks.

#include <cmath>

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/ordered_map.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

// Jensen–Shannon distance with natural logarithms: sqrt((KL(p‖m) + KL(q‖m)) / 2), m = (p + q) / 2.
double js_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double sa = 0, sb = 0;
  for (auto v : a) sa += static_cast<double>(v);
  for (auto v : b) sb += static_cast<double>(v);
  double kl_p = 0, kl_q = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double p = static_cast<double>(a[i]) / sa, q = static_cast<double>(b[i]) / sb, m = (p + q) / 2;
    if (p > 0) kl_p += p * std::log(p / m);
    if (q > 0) kl_q += q * std::log(q / m);
  }
  double divergence = (kl_p + kl_q) / 2;
  return std::sqrt(std::max(0.0, divergence));
}

class LoadBalancing : public Rule {
 public:
  LoadBalancing(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {
    threshold_ = params.number("threshold");
    patience_ = params.integer("patience");
    int last = compat_ ? 98 : 100;
    for (int e = 0; e <= last; e += 2) edges_.push_back(e);
  }

  void on_window(const Window& window) override {
    for (const store::SystemMetric* m : window.system) {
      if (m->dimension != "GPUUtilization") continue;
      auto& values = gpus_[m->node_id][m->name];
      values.push_back(m->value);
      datapoints_ = static_cast<int64_t>(values.size());
    }
    for (auto& [node, gpus] : gpus_) {
      std::vector<std::pair<std::string, std::vector<int64_t>>> histograms;
      for (auto& [gpu, values] : gpus) {
        auto counts = histogram_with_edges(values, edges_);
        details_[node]["workloads"][gpu] = counts;
        histograms.emplace_back(gpu, std::move(counts));
      }
      if (compat_) continue;  // smdebug compares no pair (see above)
      for (size_t i = 0; i < histograms.size(); ++i) {
        for (size_t j = i + 1; j < histograms.size(); ++j) {
          const auto& [gpu1, h1] = histograms[i];
          const auto& [gpu2, h2] = histograms[j];
          if (static_cast<int64_t>(gpus[gpu1].size()) <= patience_ || static_cast<int64_t>(gpus[gpu2].size()) <= patience_)
            continue;
          double distance = js_distance(h1, h2);
          if (!std::isfinite(distance)) continue;
          if (distance > max_distance_) {
            max_distance_ = distance;
            max_pair_ = fmt::format("{} {}/{}", machine(node), gpu1, gpu2);
          }
          if (distance > threshold_) {
            ++violations_;
            ++triggered_;
            details_[node]["distances"][gpu1][gpu2] = distance;
          }
        }
      }
    }
  }

  std::string rule_parameters() const override {
    return fmt::format("threshold:{}\npatience:{}", params_.str("threshold"), params_.str("patience"));
  }

  std::string evidence() const override {
    if (compat_) return "smdebug's LoadBalancing compares no GPU pair (--compat smdebug)";
    if (max_pair_.empty()) {
      size_t most = 0;
      for (const auto& [node, gpus] : gpus_) most = std::max(most, gpus.size());
      if (most < 2) return "one GPU per node: nothing to balance";
      return fmt::format("GPU pairs need more than {} samples each before they are compared", patience_);
    }
    return fmt::format("largest workload distance {:.3f} between {} (threshold {})", max_distance_, max_pair_,
                       params_.str("threshold"));
  }

 private:
  Params params_;
  bool compat_;
  double threshold_;
  int64_t patience_;
  std::vector<double> edges_;
  OrderedMap<std::string, OrderedMap<std::string, std::vector<double>>> gpus_;
  double max_distance_ = -1;
  std::string max_pair_;
};

}  // namespace

RuleDef load_balancing_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "LoadBalancing",
      "GPUs of one node carry different workloads: the Jensen-Shannon distance between their utilization "
      "histograms exceeds `threshold`.",
      "Balance the work across GPUs: check the data-parallel setup or use another distribution strategy or "
      "framework.",
      {{"threshold", ParamKind::percent, "0.2", "Jensen-Shannon distance (0 to 0.83) counted as imbalance"},
       {"patience", ParamKind::count, "1000", "values to collect per GPU before comparing"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<LoadBalancing>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (!has_dimension(input, "GPUUtilization")) return "no GPU metrics (CPU-only job)";
    OrderedMap<std::string, OrderedMap<std::string, bool>> gpus;
    for (const auto& m : input.system) {
      if (m.dimension == "GPUUtilization") gpus[m.node_id][m.name] = true;
    }
    for (const auto& [node, names] : gpus) {
      if (names.size() >= 2) return std::nullopt;
    }
    return "one GPU per node: nothing to balance";
  };
  return def;
}

}  // namespace sprof::rules
