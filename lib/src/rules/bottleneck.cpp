#include "rules/bottleneck.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace sprof::rules {

BottleneckRule::BottleneckRule(BottleneckSpec spec, const Params& params, const RuleContext& context)
    : spec_(std::move(spec)), params_(params), compat_(context.compat) {
  threshold_ = params.number("threshold");
  gpu_threshold_ = params.number("gpu_threshold");
  other_threshold_ = params.number(spec_.threshold_param);
  patience_ = params.integer("patience");
}

void BottleneckRule::on_window(const Window& window) {
  // Per window, as smdebug: snapshot -> low GPU values / high core values seen in it.
  OrderedMap<std::string, int64_t> low_gpus, high_cores;
  std::unordered_map<std::string, double> snapshot_time;
  for (const store::SystemMetric* m : window.system) {
    double& current = snapshot_[m->node_id];
    if (std::abs(current - m->timestamp) > 0.02) {
      current = m->timestamp;
      ++datapoints_;
    }
    std::string key = m->node_id + "\n" + python_float_text(current);
    snapshot_time[key] = current;
    if (m->dimension == "GPUUtilization" && m->value < gpu_threshold_) {
      if (!low_gpus.contains(key)) ++low_gpu_;
      low_gpus[key] += 1;
    } else if (m->dimension == spec_.dimension && m->value > other_threshold_) {
      high_cores[key] += 1;
    }
  }
  std::vector<double> times;
  for (const auto& [key, cores] : high_cores) {
    if (const int64_t* gpus = low_gpus.find(key)) {
      bottlenecks_[key] = Counts{*gpus, cores};
      times.push_back(snapshot_time[key]);
    }
  }
  violations_ = static_cast<int64_t>(bottlenecks_.size());
  details_["low_gpu_utilization"] = low_gpu_;
  write_bottlenecks();
  if (datapoints_ > patience_ &&
      (static_cast<double>(bottlenecks_.size()) / static_cast<double>(datapoints_)) * 100 > threshold_) {
    ++triggered_;
    // Framework events running at each new bottleneck instant (start < t < end).
    std::set<const store::TraceEvent*> counted;
    for (double t : times) {
      double t_us = t * 1000 * 1000;
      for (const store::TraceEvent* e : window.framework) {
        if (!(static_cast<double>(e->start_us) < t_us && static_cast<double>(e->end_us) > t_us)) continue;
        // smdebug adds an event once per instant it spans; sprof counts it once.
        if (!compat_ && !counted.insert(e).second) continue;
        breakdown_.add(*e);
      }
    }
    breakdown_.write(details_, compat_);
  }
}

void BottleneckRule::write_bottlenecks() {
  // smdebug keys bottlenecks by the snapshot timestamp (seconds) as text; nodes sharing an instant
  // are summed under one key.
  Json bottlenecks = Json::object();
  for (const auto& [key, counts] : bottlenecks_) {
    std::string ts = key.substr(key.find('\n') + 1);
    if (bottlenecks.contains(ts)) {
      bottlenecks[ts]["GPUs"] = bottlenecks[ts]["GPUs"].get<int64_t>() + counts.gpus;
      bottlenecks[ts]["CPUs"] = bottlenecks[ts]["CPUs"].get<int64_t>() + counts.cores;
    } else {
      bottlenecks[ts] = Json{{"GPUs", counts.gpus}, {"CPUs", counts.cores}};
    }
  }
  details_["bottlenecks"] = std::move(bottlenecks);
}

std::string BottleneckRule::rule_parameters() const {
  return fmt::format("threshold:{}\n{}:{}\ngpu_threshold:{}\npatience:{}", params_.str("threshold"),
                     spec_.threshold_param, params_.str(spec_.threshold_param), params_.str("gpu_threshold"),
                     params_.str("patience"));
}

std::string BottleneckRule::evidence() const {
  double percent = datapoints_ > 0 ? 100.0 * static_cast<double>(bottlenecks_.size()) / static_cast<double>(datapoints_)
                                   : 0.0;
  std::string text = fmt::format("{} of {} snapshots ({:.1f}%) had a GPU below {}% while a core's {} was above {}%",
                                 bottlenecks_.size(), datapoints_, percent, params_.str("gpu_threshold"), spec_.what,
                                 params_.str(spec_.threshold_param));
  text += fmt::format(" (fires above {}%", params_.str("threshold"));
  if (datapoints_ <= patience_) text += fmt::format(", after more than {} snapshots", patience_);
  text += ")";
  return text;
}

}  // namespace sprof::rules
