// Threshold rules from rule files: a metric per data point (a step, or a system tick), aggregated
// over tumbling windows of N steps or S seconds, compared with a threshold. Only complete windows
// count, so a verdict never changes as a window fills; each complete window that meets the
// comparison is one trigger.

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "rules/custom_rule_model.hpp"
#include "rules/numeric.hpp"
#include "rules/rule.hpp"

namespace sprof::rules {
namespace {

struct MetricName {
  CustomMetric metric;
  const char* name;
};
constexpr MetricName kMetrics[] = {
    {CustomMetric::step_time, "step_time"},
    {CustomMetric::function, "function"},
    {CustomMetric::cpu_utilization, "cpu_utilization"},
    {CustomMetric::io_wait, "io_wait"},
    {CustomMetric::gpu_utilization, "gpu_utilization"},
    {CustomMetric::gpu_memory_utilization, "gpu_memory_utilization"},
    {CustomMetric::memory_used, "memory_used"},
    {CustomMetric::system, "system"},
};

struct AggregationName {
  Aggregation aggregation;
  const char* name;
};
constexpr AggregationName kAggregations[] = {
    {Aggregation::mean, "mean"}, {Aggregation::min, "min"}, {Aggregation::max, "max"},
    {Aggregation::p50, "p50"},   {Aggregation::p95, "p95"}, {Aggregation::share, "share"},
};

// One data point: a step or a system tick.
struct Point {
  int64_t start_us = 0;
  int64_t end_us = 0;
  double value = 0;
  double part = 0;   // share: this point's part ...
  double whole = 0;  // ... of this whole (function: the step's sampled time)
  int64_t step = -1;
  bool valid = true;  // false: a step without samples (it counts in its window, with no value)
};

struct WindowValue {
  std::string node;
  std::string label;  // "train steps 10-14", "t+20.0-30.0 s"
  double value = 0;
};

// Thresholds and step times need more than format_number's one decimal.
std::string num(double v) { return fmt::format("{:.4g}", v); }

bool holds(Comparison c, double value, double threshold) {
  switch (c) {
    case Comparison::greater: return value > threshold;
    case Comparison::greater_equal: return value >= threshold;
    case Comparison::less: return value < threshold;
    case Comparison::less_equal: return value <= threshold;
  }
  return false;
}

bool function_matches(const ThresholdRule& rule, const FunctionTime& f) {
  const std::string& want = rule.function;
  size_t colon = want.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    std::string file = want.substr(0, colon), name = want.substr(colon + 1);
    bool file_ok = f.file == file || (f.file.size() > file.size() && f.file.ends_with(file) &&
                                      f.file[f.file.size() - file.size() - 1] == '/');
    return file_ok && (f.name == name || f.name.ends_with("." + name));
  }
  return f.name == want || f.name.ends_with("." + want);
}

// The figure of one system tick, or nothing when the tick lacks it.
std::optional<double> tick_value(const ThresholdRule& rule, const SystemTick& tick) {
  double sum = 0;
  int n = 0;
  for (const auto* m : tick.metrics) {
    bool match = false;
    switch (rule.metric) {
      case CustomMetric::cpu_utilization: match = m->type == "cpu" && m->dimension == "CPUUtilization"; break;
      case CustomMetric::io_wait: match = m->type == "cpu" && m->dimension == "I/OWaitPercentage"; break;
      case CustomMetric::gpu_utilization: match = m->dimension == "GPUUtilization"; break;
      case CustomMetric::gpu_memory_utilization: match = m->dimension == "GPUMemoryUtilization"; break;
      case CustomMetric::memory_used: match = m->type == "memory" && m->name == "MemoryUsedPercent"; break;
      case CustomMetric::system: match = m->dimension == rule.dimension; break;
      default: break;
    }
    if (!match || (!rule.device.empty() && m->name != rule.device)) continue;
    sum += m->value;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// Nothing when no point of the window has a value.
std::optional<double> aggregate(Aggregation a, const std::vector<const Point*>& points, double span_us) {
  std::vector<double> values;
  for (const Point* p : points) {
    if (p->valid) values.push_back(p->value);
  }
  if (values.empty()) return std::nullopt;
  switch (a) {
    case Aggregation::mean: return mean(values);
    case Aggregation::min: return *std::min_element(values.begin(), values.end());
    case Aggregation::max: return *std::max_element(values.begin(), values.end());
    case Aggregation::p50: return quantile(values, 0.5);
    case Aggregation::p95: return quantile(values, 0.95);
    case Aggregation::share: {
      double part = 0, whole = 0;
      for (const Point* p : points) {
        part += p->part;
        whole += p->whole;
      }
      if (whole <= 0) whole = span_us / 1e6;  // step_time: the window's wall time
      return whole > 0 ? 100.0 * part / whole : 0.0;
    }
  }
  return 0;
}

std::string step_label(const std::string& mode, const std::vector<const Point*>& points) {
  return fmt::format("{} steps {}-{}", mode.empty() ? std::string("all") : mode, points.front()->step,
                     points.back()->step);
}

class Evaluation {
 public:
  Evaluation(const ThresholdRule& rule, const RuleRecords& records) : rule_(rule), records_(records) {
    for (const auto& s : records.steps) data_end_us_ = std::max(data_end_us_, s.end_us);
    for (const auto& t : records.ticks) data_end_us_ = std::max(data_end_us_, t.timestamp_us);
    // A step whose samples are not written yet is not a point yet: a window that would hold it
    // is not complete, so that a window's verdict never changes once it is counted.
    if (rule_.metric == CustomMetric::function) {
      for (const auto& s : records.steps) {
        if (s.samples_pending) data_end_us_ = std::min(data_end_us_, s.end_us);
      }
    }
  }

  RuleResult run() {
    std::optional<std::string> missing;
    if (is_system_metric(rule_.metric)) {
      missing = system_windows();
    } else {
      missing = step_windows();
    }
    return result(missing);
  }

 private:
  bool mode_ok(const StepRecord& s) const { return rule_.mode.empty() || s.mode == rule_.mode; }

  // Step metrics, per framework node.
  std::optional<std::string> step_windows() {
    bool need_samples = rule_.metric == CustomMetric::function && !records_.samples;
    std::map<std::string, std::vector<Point>> by_node;
    std::map<std::string, size_t> per_node;
    size_t steps = 0;
    for (const auto& s : records_.steps) {
      if (!mode_ok(s)) continue;
      steps = std::max(steps, ++per_node[s.node]);
      Point p{s.start_us, s.end_us, s.duration_s(), s.duration_s(), 0, s.step};
      if (rule_.metric == CustomMetric::function) {
        if (s.samples_pending) continue;  // counted once its samples are written
        if (!s.sampled || s.sampled_s <= 0) {
          p.valid = false;
          p.part = 0;
          by_node[s.node].push_back(p);
          continue;
        }
        double t = 0;
        for (const auto& f : s.functions) {
          if (function_matches(rule_, f)) t = std::max(t, rule_.self_time ? f.self_s : f.total_s);
        }
        p.part = t;
        p.whole = s.sampled_s;
        p.value = 100.0 * t / s.sampled_s;
      }
      by_node[s.node].push_back(p);
    }
    if (steps == 0) {
      return rule_.mode.empty() ? std::string("no step events (Step:ModeKeys.*) in the framework timeline")
                                : fmt::format("no {} steps in the framework timeline", rule_.mode);
    }
    if (need_samples) {
      return std::string("no Python samples in this profile (function shares come from sprof record's samples)");
    }
    for (const auto& [node, points] : by_node) cut(node, points, true);
    if (windows_ == 0) return too_few(steps, "steps");
    return std::nullopt;
  }

  // System metrics, per system node.
  std::optional<std::string> system_windows() {
    std::vector<std::pair<int64_t, int64_t>> mode_spans;
    std::vector<std::vector<const StepRecord*>> step_groups;
    size_t series_steps = 0;
    if (!rule_.mode.empty() || rule_.window_steps > 0) {
      // The steps of the first framework node are the clock (one process's loop).
      std::string first_node;
      for (const auto& s : records_.steps) {
        if (mode_ok(s) && (first_node.empty() || s.node < first_node)) first_node = s.node;
      }
      std::vector<const StepRecord*> series;
      for (const auto& s : records_.steps) {
        if (mode_ok(s) && s.node == first_node) series.push_back(&s);
      }
      if (series.empty()) {
        return rule_.mode.empty() ? std::string("no step events (Step:ModeKeys.*) to count windows of steps")
                                  : fmt::format("no {} steps in the framework timeline", rule_.mode);
      }
      for (const auto* s : series) mode_spans.emplace_back(s->start_us, s->end_us);
      series_steps = series.size();
      if (rule_.window_steps > 0) {
        for (size_t i = 0; i + size_t(rule_.window_steps) <= series.size(); i += size_t(rule_.window_steps)) {
          step_groups.emplace_back(series.begin() + long(i), series.begin() + long(i) + rule_.window_steps);
        }
      }
    }
    std::map<std::string, std::vector<Point>> by_node;
    size_t ticks = 0;
    for (const auto& t : records_.ticks) {
      auto v = tick_value(rule_, t);
      if (!v) continue;
      if (!mode_spans.empty() && rule_.window_steps == 0 &&
          std::none_of(mode_spans.begin(), mode_spans.end(),
                       [&](const auto& span) { return t.timestamp_us >= span.first && t.timestamp_us < span.second; })) {
        continue;
      }
      ++ticks;
      by_node[t.node].push_back(Point{t.timestamp_us, t.timestamp_us, *v, 0, 0, -1});
    }
    if (ticks == 0) {
      return fmt::format("no {} records in the system metrics{}", system_figure(),
                         rule_.mode.empty() ? "" : fmt::format(" during {} steps", rule_.mode));
    }
    for (const auto& [node, points] : by_node) {
      if (rule_.window_steps == 0) {
        cut(node, points, false);
        continue;
      }
      for (const auto& group : step_groups) {
        // The ticks during the group's steps (with a mode, not those between them, which may be
        // another mode's); without a mode, from the first step's start to the last one's end.
        std::vector<const Point*> inside;
        for (const auto& p : points) {
          bool in = rule_.mode.empty()
                        ? p.start_us >= group.front()->start_us && p.start_us < group.back()->end_us
                        : std::any_of(group.begin(), group.end(), [&p](const StepRecord* s) {
                            return p.start_us >= s->start_us && p.start_us < s->end_us;
                          });
          if (in) inside.push_back(&p);
        }
        if (inside.empty()) continue;
        add_window(node,
                   fmt::format("{} steps {}-{}", rule_.mode.empty() ? std::string("all") : rule_.mode,
                               group.front()->step, group.back()->step),
                   aggregate(rule_.aggregation, inside, 0));
      }
    }
    if (windows_ == 0) return too_few(series_steps, "steps");
    return std::nullopt;
  }

  std::string system_figure() const {
    if (rule_.metric == CustomMetric::system) return rule_.dimension;
    switch (rule_.metric) {
      case CustomMetric::cpu_utilization: return "CPUUtilization";
      case CustomMetric::io_wait: return "I/OWaitPercentage";
      case CustomMetric::gpu_utilization: return "GPUUtilization";
      case CustomMetric::gpu_memory_utilization: return "GPUMemoryUtilization";
      case CustomMetric::memory_used: return "MemoryUsedPercent";
      default: return metric_name(rule_.metric);
    }
  }

  std::string too_few(size_t have, const char* what) const {
    if (rule_.window_steps > 0) {
      return fmt::format("no complete window yet: {} {}{}, the window is {}", have,
                         rule_.mode.empty() ? std::string("") : rule_.mode + " ", what, rule_.window_steps);
    }
    return fmt::format("no complete window of {} s yet", num(rule_.window_seconds));
  }

  // Tumbling windows over a node's points, complete ones only.
  void cut(const std::string& node, const std::vector<Point>& points, bool steps) {
    if (points.empty()) return;
    if (rule_.window_steps > 0 && steps) {
      size_t n = size_t(rule_.window_steps);
      for (size_t i = 0; i + n <= points.size(); i += n) {
        std::vector<const Point*> window;
        for (size_t k = i; k < i + n; ++k) window.push_back(&points[k]);
        double span = double(window.back()->end_us - window.front()->start_us);
        add_window(node, step_label(rule_.mode, window), aggregate(rule_.aggregation, window, span));
      }
      return;
    }
    // Points are in order of their end; each falls in window (end - t0) / width. Only windows
    // that hold a point are visited, so a short window over a long run costs nothing extra.
    int64_t width = int64_t(std::llround(rule_.window_seconds * 1e6));
    int64_t t0 = points.front().start_us;
    for (size_t i = 0; i < points.size();) {
      int64_t begin = t0 + (points[i].end_us - t0) / width * width;
      if (begin + width > data_end_us_) break;  // not complete yet
      std::vector<const Point*> window;
      for (; i < points.size() && points[i].end_us < begin + width; ++i) window.push_back(&points[i]);
      std::string label = steps ? step_label(rule_.mode, window)
                                : fmt::format("{:.1f}-{:.1f} s after the first record", double(begin - t0) / 1e6,
                                              double(begin + width - t0) / 1e6);
      add_window(node, label, aggregate(rule_.aggregation, window, double(width)));
    }
  }

  void add_window(const std::string& node, std::string label, std::optional<double> aggregated) {
    if (!aggregated) return;
    double value = *aggregated;
    ++windows_;
    if (!seen_value_ || closer(value, extreme_)) extreme_ = value;
    seen_value_ = true;
    if (!holds(rule_.comparison, value, rule_.threshold)) return;
    fired_.push_back({node, std::move(label), value});
  }

  // Nearer to meeting the comparison.
  bool closer(double a, double b) const {
    return rule_.comparison == Comparison::greater || rule_.comparison == Comparison::greater_equal ? a > b : a < b;
  }

  std::string what() const {
    bool share = rule_.aggregation == Aggregation::share;
    if (rule_.metric == CustomMetric::function) {
      std::string time = rule_.self_time ? "own time" : "time";
      return share ? fmt::format("share of {} in {}", time, rule_.function)
                   : fmt::format("{} share of {} in {}", aggregation_name(rule_.aggregation), time, rule_.function);
    }
    if (rule_.metric == CustomMetric::step_time && share) return "share of time in steps";
    std::string metric = rule_.metric == CustomMetric::system ? rule_.dimension : std::string(metric_name(rule_.metric));
    if (!rule_.device.empty()) metric += " of " + rule_.device;
    return fmt::format("{} {}", aggregation_name(rule_.aggregation), metric);
  }

  std::string fill(std::string text, const WindowValue& w) const {
    auto replace = [&text](std::string_view key, const std::string& value) {
      for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
        text.replace(at, key.size(), value);
      }
    };
    replace("{value}", num(w.value));
    replace("{threshold}", num(rule_.threshold));
    replace("{window}", w.label);
    replace("{node}", w.node);
    return text;
  }

  RuleResult result(const std::optional<std::string>& missing) const {
    RuleResult r;
    r.rule = rule_.name;
    r.recommendation = rule_.recommendation;
    r.rule_parameters = parameters();
    r.datapoints = int64_t(windows_);
    r.triggered = int64_t(fired_.size());
    r.violations = r.triggered;
    Json details = Json::object();
    details["metric"] = metric_name(rule_.metric);
    details["windows"] = windows_;
    details["triggered_windows"] = Json::array();
    size_t first = fired_.size() > 50 ? fired_.size() - 50 : 0;
    for (size_t i = first; i < fired_.size(); ++i) {
      details["triggered_windows"].push_back(
          {{"node", fired_[i].node}, {"window", fired_[i].label}, {"value", fired_[i].value}});
    }
    r.details_json = details.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (missing) {
      r.status = RuleStatus::no_data;
      r.evidence = *missing;
      return r;
    }
    if (fired_.empty()) {
      r.status = RuleStatus::no_issues_found;
      r.evidence = fmt::format("{} {} the threshold {} {} in none of {} windows (nearest: {})", what(),
                               "met", comparison_text(rule_.comparison), num(rule_.threshold), windows_,
                               num(extreme_));
      return r;
    }
    r.status = RuleStatus::issues_found;
    const WindowValue& last = fired_.back();
    std::string numbers = fmt::format("{} {} {} {} over {} on {} ({} of {} windows)", what(), num(last.value),
                                      comparison_text(rule_.comparison), num(rule_.threshold), last.label,
                                      last.node, fired_.size(), windows_);
    r.evidence = rule_.message.empty() ? numbers : fmt::format("{} [{}]", fill(rule_.message, last), numbers);
    return r;
  }

  std::string parameters() const {
    std::vector<std::string> lines{fmt::format("metric:{}", metric_name(rule_.metric))};
    if (!rule_.function.empty()) {
      lines.push_back("function:" + rule_.function);
      lines.push_back(std::string("time:") + (rule_.self_time ? "self" : "total"));
    }
    if (!rule_.dimension.empty()) lines.push_back("dimension:" + rule_.dimension);
    if (!rule_.device.empty()) lines.push_back("device:" + rule_.device);
    lines.push_back(fmt::format("aggregation:{}", aggregation_name(rule_.aggregation)));
    lines.push_back(rule_.window_steps > 0 ? fmt::format("window:{} steps", rule_.window_steps)
                                           : fmt::format("window:{} s", num(rule_.window_seconds)));
    if (!rule_.mode.empty()) lines.push_back("mode:" + rule_.mode);
    lines.push_back(fmt::format("comparison:{}", comparison_text(rule_.comparison)));
    lines.push_back("threshold:" + num(rule_.threshold));
    return fmt::format("{}", fmt::join(lines, "\n"));
  }

  const ThresholdRule& rule_;
  const RuleRecords& records_;
  int64_t data_end_us_ = INT64_MIN;
  size_t windows_ = 0;
  std::vector<WindowValue> fired_;
  bool seen_value_ = false;
  double extreme_ = 0;
};

}  // namespace

std::optional<CustomMetric> parse_metric(std::string_view name) {
  for (const auto& m : kMetrics) {
    if (name == m.name) return m.metric;
  }
  return std::nullopt;
}

const char* metric_name(CustomMetric metric) {
  for (const auto& m : kMetrics) {
    if (m.metric == metric) return m.name;
  }
  return "?";
}

std::vector<std::string> metric_names() {
  std::vector<std::string> names;
  for (const auto& m : kMetrics) names.emplace_back(m.name);
  return names;
}

bool is_system_metric(CustomMetric metric) {
  return metric != CustomMetric::step_time && metric != CustomMetric::function;
}

std::optional<Aggregation> parse_aggregation(std::string_view name) {
  for (const auto& a : kAggregations) {
    if (name == a.name) return a.aggregation;
  }
  return std::nullopt;
}

const char* aggregation_name(Aggregation aggregation) {
  for (const auto& a : kAggregations) {
    if (a.aggregation == aggregation) return a.name;
  }
  return "?";
}

std::optional<Comparison> parse_comparison(std::string_view text) {
  if (text == ">") return Comparison::greater;
  if (text == ">=") return Comparison::greater_equal;
  if (text == "<") return Comparison::less;
  if (text == "<=") return Comparison::less_equal;
  return std::nullopt;
}

const char* comparison_text(Comparison comparison) {
  switch (comparison) {
    case Comparison::greater: return ">";
    case Comparison::greater_equal: return ">=";
    case Comparison::less: return "<";
    case Comparison::less_equal: return "<=";
  }
  return "?";
}

std::string describe(const ThresholdRule& rule) {
  std::string window = rule.window_steps > 0
                           ? fmt::format("{} {}steps", rule.window_steps, rule.mode.empty() ? "" : rule.mode + " ")
                           : fmt::format("{} s{}", num(rule.window_seconds),
                                         rule.mode.empty() ? "" : " of " + rule.mode + " steps");
  std::string metric = rule.metric == CustomMetric::function ? "share of " + rule.function
                       : rule.metric == CustomMetric::system ? rule.dimension
                                                             : std::string(metric_name(rule.metric));
  return fmt::format("{} {} over {} {} {}", aggregation_name(rule.aggregation), metric, window,
                     comparison_text(rule.comparison), num(rule.threshold));
}

RuleResult evaluate_threshold(const ThresholdRule& rule, const RuleRecords& records) {
  return Evaluation(rule, records).run();
}

}  // namespace sprof::rules
