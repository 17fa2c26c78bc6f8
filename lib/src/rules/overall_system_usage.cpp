// OverallSystemUsage (smdebug/profiler/analysis/rules/overall_system_usage.py): per node,
// percentiles of total CPU, GPU, GPU memory, CPU memory, I/O wait and network over time. Never
// fires.
//
// smdebug divides by the number of devices seen on all nodes together; sprof by the node's own
// (the same on homogeneous clusters); --compat smdebug divides by the global count.

#include <set>

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/ordered_map.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

using Series = OrderedMap<std::string, OrderedMap<double, double>>;  // node -> timestamp -> sum

class OverallSystemUsage : public Rule {
 public:
  OverallSystemUsage(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {}

  void on_window(const Window& window) override {
    for (const store::SystemMetric* m : window.system) {
      const std::string& node = m->node_id;
      if (m->dimension == "GPUMemoryUtilization") gpu_memory_[node][m->timestamp] += m->value;
      if (m->dimension == "GPUUtilization") {
        gpu_ids_[node].insert(m->name);
        all_gpu_ids_.insert(m->name);
        gpu_[node][m->timestamp] += m->value;
      }
      if (m->name == "MemoryUsedPercent") cpu_memory_[node][m->timestamp] += m->value;
      if (m->dimension == "CPUUtilization") {
        core_ids_[node].insert(m->name);
        all_core_ids_.insert(m->name);
        cpu_[node][m->timestamp] += m->value;
      }
      if (m->dimension == "Algorithm") network_[node][m->timestamp] += m->value;
      if (m->dimension == "I/OWaitPercentage") io_[node][m->timestamp] += m->value;
    }
    if (!cpu_.empty()) datapoints_ = static_cast<int64_t>(cpu_.front().second.size());
  }

  void finish() override {
    // Every window recomputes these from all values so far; the last one is what the report shows.
    record(network_, "Network", nullptr);
    record(gpu_, "GPU", &gpu_ids_);
    record(cpu_, "CPU", &core_ids_);
    record(cpu_memory_, "CPU memory", nullptr);
    record(gpu_memory_, "GPU memory", &gpu_ids_);
    record(io_, "I/O", &core_ids_);
  }

  std::string rule_parameters() const override { return ""; }

  std::string evidence() const override {
    std::string text;
    for (const char* key : {"CPU", "GPU", "CPU memory"}) {
      if (!details_.contains(key)) continue;
      for (const auto& [node, stats] : details_[key].items()) {
        if (!text.empty()) text += ", ";
        text += fmt::format("{} {} p50 {}% max {}%", machine(node), key, stats["p50"].dump(), stats["max"].dump());
      }
    }
    return text.empty() ? "no CPU, GPU or memory metrics" : text;
  }

 private:
  using Devices = OrderedMap<std::string, std::set<std::string>>;

  void record(const Series& series, const char* name, const Devices* devices) {
    Json& out = details_[name];
    if (!out.is_object()) out = Json::object();
    for (const auto& [node, sums] : series) {
      double n = 1;
      if (devices != nullptr) {
        if (compat_) {
          n = static_cast<double>(devices == &gpu_ids_ ? all_gpu_ids_.size() : all_core_ids_.size());
        } else {
          const auto* own = devices->find(node);
          n = own ? static_cast<double>(own->size()) : 0;
        }
      }
      if (n <= 0) continue;  // e.g. GPU memory without GPU utilization: no device count to divide by
      std::vector<double> values;
      values.reserve(sums.size());
      for (const auto& [ts, v] : sums) values.push_back(v);
      std::sort(values.begin(), values.end());
      // smdebug: value / n, negatives clamped to the integer 0, rounded to 2 decimals.
      auto stat = [&](double v) -> Json {
        v /= n;
        if (!(v > 0)) return 0;
        return python_round(v, 2);
      };
      out[node] = Json{{"max", stat(values.back())},
                       {"p99", stat(quantile_sorted(values, 0.99))},
                       {"p95", stat(quantile_sorted(values, 0.95))},
                       {"p50", stat(quantile_sorted(values, 0.50))},
                       {"min", stat(values.front())}};
    }
  }

  Params params_;
  bool compat_;
  Series gpu_memory_, cpu_memory_, gpu_, cpu_, network_, io_;
  Devices gpu_ids_, core_ids_;
  std::set<std::string> all_gpu_ids_, all_core_ids_;
};

}  // namespace

RuleDef overall_system_usage_rule() {
  RuleDef def;
  def.info = RuleInfo{"OverallSystemUsage",
                      "Summarizes CPU, GPU, GPU memory, CPU memory, I/O wait and network usage per node (never fires).",
                      "Compare the utilization with the instance's capacity; a lightly used node can be smaller.",
                      {{"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
                      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<OverallSystemUsage>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.system.empty()) return "no system metrics";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
