// StepOutlier (smdebug/profiler/analysis/rules/step_outlier.py): steps slower than mean +
// stddev·std of their phase, counted once a phase has more than 100 steps; fires when a phase has
// more than n_outliers outliers.

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "rules/breakdown.hpp"
#include "rules/numeric.hpp"
#include "rules/registry.hpp"

namespace sprof::rules {
namespace {

Json arg_json(const store::ArgValue* value) {
  if (value == nullptr) return nullptr;
  if (auto s = std::get_if<std::string>(value)) return *s;
  if (auto i = std::get_if<int64_t>(value)) return *i;
  if (auto d = std::get_if<double>(value)) return *d;
  if (auto b = std::get_if<bool>(value)) return *b;
  return nullptr;
}

class StepOutlier : public Rule {
 public:
  StepOutlier(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {
    stddev_ = params.number("stddev");
    n_outliers_ = params.integer("n_outliers");
    const ParamValue& mode = params.get("mode");
    if (!mode.none) {
      mode_ = mode.text;
      std::string upper = mode.text;
      std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
      mode_lane_ = upper.rfind("STEP:MODEKEYS.", 0) == 0 ? "Step:ModeKeys." + upper.substr(14) : "Step:ModeKeys." + upper;
    }
    details_["step_details"] = Json::object();
  }

  bool selected(const store::TraceEvent& e) const {
    bool is_step = e.name.find("Step:ModeKeys") != std::string::npos;
    if (compat_) return is_step || (mode_ && e.name == *mode_);  // smdebug: mode only adds events
    if (!mode_) return is_step;
    return e.name == *mode_ || e.name == mode_lane_;
  }

  void on_window(const Window& window) override {
    // Step intervals of this window, by node and step number (the first event of that number).
    OrderedMap<std::string, OrderedMap<std::string, std::pair<int64_t, int64_t>>> intervals;
    for (const store::TraceEvent* e : window.framework) {
      if (!selected(*e)) continue;
      ++datapoints_;
      auto& series = steps_[e->node_id][e->name];
      series.durations.push_back(static_cast<double>(e->end_us - e->start_us) / 1000000.0);
      const store::ArgValue* step = e->args.find("step_num");
      series.numbers.push_back(arg_json(step));
      std::string step_key = e->args.text("step_num").value_or("");
      auto& node_intervals = intervals[e->node_id];
      if (!node_intervals.contains(step_key)) node_intervals[step_key] = {e->start_us, e->end_us};
    }
    for (auto& [node, phases] : steps_) {
      for (auto& [phase, series] : phases) {
        if (series.durations.size() <= 100) continue;
        evaluate(window, intervals, node, phase, series);
      }
    }
  }

  void finish() override {
    // The node entry smdebug shows is its last-evaluated phase; sprof shows TRAIN (or the first phase)
    // and every phase under per_phase.
    if (compat_) return;
    Json per_phase = Json::object();
    for (auto& [node, phases] : last_stats_) {
      const Json* chosen = nullptr;
      for (auto& [phase, stats] : phases) {
        per_phase[node][phase] = stats;
        if (phase == "Step:ModeKeys.TRAIN") chosen = &stats;
      }
      if (chosen == nullptr) chosen = &phases.front().second;
      details_["step_details"][node] = *chosen;
    }
    if (!per_phase.empty()) details_["per_phase"] = std::move(per_phase);
  }

  std::string rule_parameters() const override {
    return fmt::format("threshold:{}\nmode:{}\nn_outliers:{}\nstddev:{}", params_.str("stddev"), params_.str("mode"),
                       params_.str("n_outliers"), params_.str("stddev"));
  }

  std::string evidence() const override {
    if (last_stats_.empty()) {
      size_t most = 0;
      for (const auto& [node, phases] : steps_) {
        for (const auto& [phase, series] : phases) most = std::max(most, series.durations.size());
      }
      return fmt::format("{} step{} in the longest phase; more than 100 are needed before outliers are counted", most,
                         most == 1 ? "" : "s");
    }
    std::string text;
    for (const auto& [node, phases] : last_stats_) {
      for (const auto& [phase, stats] : phases) {
        if (!text.empty()) text += "; ";
        text += fmt::format("{} {}: {} outlier(s) > mean {:.3f}s + {}·std {:.3f}s", node, phase,
                            stats["number_of_outliers"].get<int64_t>(), stats["step_stats"]["mean"].get<double>(),
                            params_.str("stddev"), stats["stddev"].get<double>());
      }
    }
    return text;
  }

 private:
  struct Series {
    std::vector<double> durations;  // seconds
    std::vector<Json> numbers;      // step_num as written
  };

  void evaluate(const Window& window,
                const OrderedMap<std::string, OrderedMap<std::string, std::pair<int64_t, int64_t>>>& intervals,
                const std::string& node, const std::string& phase, const Series& series) {
    std::span<const double> values(series.durations);
    double m = mean(values);
    double sd = population_std(values);
    double threshold = m + sd * stddev_;
    std::vector<size_t> outliers;
    std::vector<double> normal;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] > threshold) outliers.push_back(i);
      if (values[i] < threshold) normal.push_back(values[i]);
    }
    std::vector<double> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    Json stats = Json::object();
    stats["step_stats"] = Json{{"mean", m},
                               {"max", sorted.back()},
                               {"p99", quantile_sorted(sorted, 0.99)},
                               {"p95", quantile_sorted(sorted, 0.95)},
                               {"p50", quantile_sorted(sorted, 0.50)},
                               {"min", sorted.front()}};
    int64_t n = static_cast<int64_t>(outliers.size());
    stats["number_of_outliers"] = n;
    stats["phase"] = phase;
    stats["stddev"] = python_round(sd, 2);
    Histogram h = histogram(normal, 100);
    stats["probs"] = h.counts;
    stats["binedges"] = h.edges;
    Json numbers = Json::array();
    for (size_t i : outliers) numbers.push_back(series.numbers[i]);
    stats["step_numbers"] = numbers;
    if (compat_) details_["step_details"][node] = stats;
    last_stats_[node][phase] = stats;

    if (n > n_outliers_) {
      violations_ += n;
      ++triggered_;
      // Framework events of this window overlapping the outlier steps seen in this window.
      const auto* node_intervals = intervals.find(node);
      std::set<const store::TraceEvent*> counted;
      for (const Json& number : numbers) {
        if (node_intervals == nullptr) break;
        std::string key = number.is_string() ? number.get<std::string>() : number.dump();
        const auto* interval = node_intervals->find(key);
        if (interval == nullptr) continue;
        for (const store::TraceEvent* e : window.framework) {
          if (!(e->end_us >= interval->first && e->start_us <= interval->second)) continue;
          if (!compat_ && !counted.insert(e).second) continue;
          breakdown_.add(*e);
        }
      }
      breakdown_.write(details_, compat_);
    }
  }

  Params params_;
  bool compat_;
  double stddev_;
  int64_t n_outliers_;
  std::optional<std::string> mode_;
  std::string mode_lane_;
  OrderedMap<std::string, OrderedMap<std::string, Series>> steps_;   // node -> step event name -> series
  OrderedMap<std::string, OrderedMap<std::string, Json>> last_stats_;
  FrameworkBreakdown breakdown_;
};

}  // namespace

RuleDef step_outlier_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "StepOutlier",
      "Steps take longer than mean + stddev x standard deviation of their phase's step durations, more than "
      "n_outliers times.",
      "Correlate the slow steps with CPU/I-O bottlenecks, data loading and garbage collection; check what else "
      "runs in those steps.",
      {{"stddev", ParamKind::positive, "3", "factor on the standard deviation"},
       {"mode", ParamKind::mode, "None", "only steps of this mode (TRAIN, EVAL, PREDICT, GLOBAL); all when unset"},
       {"n_outliers", ParamKind::count, "10", "outliers tolerated per phase"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<StepOutlier>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    if (!has_step_events(input)) return "no step events (Step:ModeKeys.*) in the framework timeline";
    return std::nullopt;
  };
  return def;
}

}  // namespace sprof::rules
