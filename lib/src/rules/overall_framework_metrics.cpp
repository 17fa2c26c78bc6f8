// OverallFrameworkMetrics (smdebug/profiler/analysis/rules/overall_framework_metrics.py): where
// framework time goes: CPU/GPU operators, step phases and the time between steps, forward/backward,
// dataloading and other lanes, Horovod. Never fires.
//
// smdebug's "others" (time in the training loop outside steps) subtracts a running sum that includes
// its own previous value; sprof uses the loop span (first step start to last step end) minus the union
// of step intervals. --compat smdebug keeps the original formula.

#include <algorithm>

#include <fmt/format.h>

#include "rules/breakdown.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

class OverallFrameworkMetrics : public Rule {
 public:
  OverallFrameworkMetrics(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {}

  void on_window(const Window& window) override {
    for (const store::TraceEvent* e : window.framework) {
      const std::string& lane = e->lane;
      double dur = static_cast<double>(e->end_us - e->start_us);
      std::string lane_lower = lower(lane);
      bool horovod = std::string_view(e->file_type()).empty();
      ++datapoints_;
      if (lane_lower.find("cpu") != std::string::npos) {
        cpu_[lane][e->name] += dur;
      } else if (lane_lower.find("gpu") != std::string::npos) {
        gpu_[lane][e->name] += dur;
        gpu_counts_ = static_cast<double>(gpu_.size());
      } else if (lane.find("Step") != std::string::npos) {
        if (e->args.contains("step_num")) {
          if (!start_) start_ = e->start_us;
          end_ = e->end_us;
          step_intervals_.emplace_back(e->start_us, e->end_us);
        }
        step_phases_[lane] += dur;
        if (compat_ && start_) {
          // smdebug: others = (end - start) - sum(step_phases incl. others) / gpu_counts
          double sum = 0;
          for (const auto& [name, us] : step_phases_) sum += us;
          step_phases_["others"] = static_cast<double>(end_ - *start_) - sum / gpu_counts_;
        } else if (!compat_ && start_ && !step_phases_.contains("others")) {
          step_phases_["others"] = 0;  // keeps smdebug's key order; computed in finish()
        }
      } else if (lane == "Forward-SubModuleInternal") {
        forward_[e->name] += dur;
      } else if (lane == "Backward-SubModuleInternal") {
        backward_[e->name] += dur;
      } else if (lane.find(":CPU") == std::string::npos && lane.find(":GPU") == std::string::npos && !horovod) {
        general_[lane] += dur;
      } else if (horovod) {
        horovod_[e->name] += dur;
      }
    }
  }

  void finish() override {
    if (!compat_ && start_) step_phases_["others"] = outside_steps();
    // ratio: GPU lanes then CPU lanes, each with its own total (this rule pairs them correctly).
    double total = 0;
    std::vector<std::pair<std::string, double>> lanes;
    for (const auto& [lane, ops] : gpu_) lanes.emplace_back(lane, sum(ops));
    for (const auto& [lane, ops] : cpu_) lanes.emplace_back(lane, sum(ops));
    for (const auto& [lane, us] : lanes) total += us;
    details_["ratio"] = Json::object();
    if (total > 0) {
      for (const auto& [lane, us] : lanes) details_["ratio"][lane] = us / total * 100.0;
    }
    auto operators = [&](const char* key, const char* total_key, const auto& groups) {
      if (groups.empty()) return;
      details_[key] = Json::object();
      details_[total_key] = Json::object();
      for (const auto& share : filter_operators(groups, 2)) {
        details_[key][share.name] = share.percent;
        details_[total_key][share.name] = share.total_us;
      }
    };
    operators("CPU", "CPU_total", cpu_);
    operators("GPU", "GPU_total", gpu_);
    details_["phase"] = Json::object();
    details_["phase_time"] = Json::object();
    double phase_total = sum(step_phases_);
    if (phase_total > 0) {
      for (const auto& [lane, us] : step_phases_) details_["phase"][lane] = us / phase_total * 100;
    }
    double general_total = sum(general_);
    if (!general_.empty() && general_total > 0) {
      details_["general"] = Json::object();
      for (const auto& [lane, us] : general_) details_["general"][lane] = us / general_total * 100;
    }
    if (!forward_.empty() && !backward_.empty()) {
      double f = sum(forward_), b = sum(backward_);
      if (f + b > 0) {
        details_["forward_backward"] = Json{{"Forward pass", f / (f + b) * 100}, {"Backward pass", b / (f + b) * 100}};
      }
    }
    if (!horovod_.empty()) {
      double all = sum(horovod_), kept_total = 0;
      std::vector<std::pair<std::string, double>> kept;
      for (const auto& [name, us] : horovod_) {
        if (us > 0 && us / all > 0.02) {
          kept.emplace_back(name, us);
          kept_total += us;
        }
      }
      details_["horovod"] = Json::object();
      for (const auto& [name, us] : kept) details_["horovod"][name] = us / kept_total * 100;
    }
  }

  std::string rule_parameters() const override { return ""; }

  std::string evidence() const override {
    if (!details_.contains("phase") || details_["phase"].empty()) {
      return fmt::format("{} framework event(s), no step phases", datapoints_);
    }
    std::string text;
    for (const auto& [lane, percent] : details_["phase"].items()) {
      if (!text.empty()) text += ", ";
      text += fmt::format("{} {:.1f}%", lane, percent.get<double>());
    }
    return "time in the training loop: " + text;
  }

 private:
  template <class Map>
  static double sum(const Map& map) {
    double total = 0;
    for (const auto& [key, value] : map) total += value;
    return total;
  }

  // The training loop's span minus the union of step intervals.
  double outside_steps() const {
    auto intervals = step_intervals_;
    std::sort(intervals.begin(), intervals.end());
    int64_t covered = 0, cur_start = 0, cur_end = 0;
    bool open = false;
    for (const auto& [s, e] : intervals) {
      if (!open || s > cur_end) {
        if (open) covered += cur_end - cur_start;
        cur_start = s;
        cur_end = e;
        open = true;
      } else {
        cur_end = std::max(cur_end, e);
      }
    }
    if (open) covered += cur_end - cur_start;
    int64_t first = intervals.front().first, last = 0;
    for (const auto& [s, e] : intervals) last = std::max(last, e);
    return static_cast<double>(std::max<int64_t>(0, (last - first) - covered));
  }

  Params params_;
  bool compat_;
  double gpu_counts_ = 1;
  std::optional<int64_t> start_;
  int64_t end_ = 0;
  std::vector<std::pair<int64_t, int64_t>> step_intervals_;
  OrderedMap<std::string, OrderedMap<std::string, double>> cpu_, gpu_;
  OrderedMap<std::string, double> step_phases_, forward_, backward_, general_, horovod_;
};

}  // namespace

RuleDef overall_framework_metrics_rule() {
  RuleDef def;
  def.info = RuleInfo{"OverallFrameworkMetrics",
                      "Summarizes where framework time goes: step phases and the time between steps, CPU and GPU "
                      "operators, forward and backward passes, dataloading (never fires).",
                      "Look at the largest shares first; time outside steps points at data loading or evaluation.",
                      {{"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
                      false};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<OverallFrameworkMetrics>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (input.framework.empty()) return "no framework events";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
