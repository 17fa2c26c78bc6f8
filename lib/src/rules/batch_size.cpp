// BatchSize (smdebug/profiler/analysis/rules/batch_size.py): CPU, GPU and GPU memory all low over
// the last `window` values: the batch is small for the instance.
//
// smdebug computes the GPU-memory box plot's IQR from the GPU-utilization p25 (bug); sprof uses the
// memory p25; --compat smdebug keeps the original.

#include <unordered_set>

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/ordered_map.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

class BatchSize : public Rule {
 public:
  BatchSize(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {
    cpu_p95_ = params.number("cpu_threshold_p95");
    gpu_p95_ = params.number("gpu_threshold_p95");
    memory_p95_ = params.number("gpu_memory_threshold_p95");
    patience_ = params.integer("patience");
    window_ = params.integer("window");
  }

  void on_window(const Window& window) override {
    OrderedMap<std::string, OrderedMap<double, double>> total_cpu;  // node -> timestamp -> sum over cores
    for (const store::SystemMetric* m : window.system) {
      if (m->dimension == "GPUMemoryUtilization") memory_[m->node_id][m->name].push_back(m->value);
      if (m->dimension == "GPUUtilization") gpu_[m->node_id][m->name].push_back(m->value);
      if (m->dimension == "CPUUtilization") {
        core_ids_.insert(m->name);
        total_cpu[m->node_id][m->timestamp] += m->value;
      }
    }
    for (const auto& [node, sums] : total_cpu) {
      auto& series = cpu_[node];
      for (const auto& [ts, sum] : sums) series.push_back(sum / static_cast<double>(core_ids_.size()));
    }
    const size_t w = static_cast<size_t>(window_);
    for (auto& [node, cpu] : cpu_) {
      datapoints_ = static_cast<int64_t>(cpu.size());
      if (!(cpu.size() > w && static_cast<int64_t>(cpu.size()) > patience_)) continue;
      double cpu_p95 = quantile(std::span<const double>(cpu).last(w), 0.95);
      last_cpu_p95_ = cpu_p95;
      if (!(cpu_p95 < cpu_p95_)) continue;
      auto* gpus = gpu_.find(node);
      if (gpus == nullptr) continue;
      for (auto& [gpu, util] : *gpus) {
        if (util.size() <= w) continue;
        auto* node_memory = memory_.find(node);
        auto* memory = node_memory ? node_memory->find(gpu) : nullptr;
        if (memory == nullptr || memory->empty()) continue;  // smdebug raises KeyError here
        double gpu_p95 = quantile(std::span<const double>(util).last(w), 0.95);
        double memory_p95 = quantile(std::span<const double>(*memory).last(std::min(w, memory->size())), 0.95);
        if (gpu_p95 < gpu_p95_ && memory_p95 < memory_p95_) {
          ++triggered_;
          ++violations_;
          evidence_ = fmt::format("{}/{}: p95 CPU {}%, GPU {}%, GPU memory {}% (all below {}/{}/{}%)", machine(node), gpu,
                                  format_number(cpu_p95), format_number(gpu_p95), format_number(memory_p95),
                                  params_.str("cpu_threshold_p95"), params_.str("gpu_threshold_p95"),
                                  params_.str("gpu_memory_threshold_p95"));
          Json& node_details = details_[node];
          BoxStats cpu_box = box_stats(cpu);
          node_details["cpu"] = box(cpu_box, cpu_box.p25);
          BoxStats gpu_box = box_stats(util);
          node_details[gpu] = box(gpu_box, gpu_box.p25);
          BoxStats memory_box = box_stats(*memory);
          node_details[gpu + "_memory"] = box(memory_box, compat_ ? gpu_box.p25 : memory_box.p25);
          details_["last_timestamp"] = window.start_us;
        }
      }
    }
  }

  std::string rule_parameters() const override {
    return fmt::format("cpu_threshold_p95:{}\ngpu_threshold_p95:{}\ngpu_memory_threshold_p95:{}\npatience:{}\nwindow:{}",
                       params_.str("cpu_threshold_p95"), params_.str("gpu_threshold_p95"),
                       params_.str("gpu_memory_threshold_p95"), params_.str("patience"), params_.str("window"));
  }

  std::string evidence() const override {
    if (!evidence_.empty()) return evidence_;
    if (last_cpu_p95_) {
      return fmt::format("p95 of total CPU {}% over the last {} samples", format_number(*last_cpu_p95_),
                         params_.str("window"));
    }
    return fmt::format("{} CPU sample(s); more than {} (window) and {} (patience) are needed", datapoints_,
                       params_.str("window"), params_.str("patience"));
  }

 private:
  // {p25, p50, p75, p95, upper, lower}; the IQR's lower quartile is passed in (see the bug above).
  static Json box(const BoxStats& b, double iqr_p25) {
    Json entry = Json::object();
    append_box(entry, b, iqr_p25);
    return entry;
  }

  Params params_;
  bool compat_;
  double cpu_p95_, gpu_p95_, memory_p95_;
  int64_t patience_, window_;
  std::unordered_set<std::string> core_ids_;  // distinct core names seen so far, all nodes (as smdebug)
  OrderedMap<std::string, std::vector<double>> cpu_;  // node -> total CPU per timestamp
  OrderedMap<std::string, OrderedMap<std::string, std::vector<double>>> gpu_, memory_;
  std::optional<double> last_cpu_p95_;
  std::string evidence_;
};

}  // namespace

RuleDef batch_size_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "BatchSize",
      "CPU utilization, GPU utilization and GPU memory utilization are all low (95th percentiles of the last "
      "`window` values below their thresholds).",
      "The batch is small for the instance: increase the batch size, or run on a smaller instance type.",
      {{"cpu_threshold_p95", ParamKind::percent, "70", "95th-percentile total CPU utilization (%) counted as low"},
       {"gpu_threshold_p95", ParamKind::percent, "70", "95th-percentile GPU utilization (%) counted as low"},
       {"gpu_memory_threshold_p95", ParamKind::percent, "70", "95th-percentile GPU memory (%) counted as low"},
       {"patience", ParamKind::count, "1000", "CPU values to collect before the first check"},
       {"window", ParamKind::count, "500", "number of latest values the percentiles are taken over"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<BatchSize>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (!has_dimension(input, "GPUUtilization")) return "no GPU metrics (CPU-only job)";
    if (!has_dimension(input, "CPUUtilization")) return "no CPU utilization metrics";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
