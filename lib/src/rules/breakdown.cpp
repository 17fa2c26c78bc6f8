#include "rules/breakdown.hpp"

#include <algorithm>
#include <cctype>

namespace sprof::rules {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

void FrameworkBreakdown::add(const store::TraceEvent& e) {
  ++count_;
  const std::string& lane = e.lane;
  double dur = static_cast<double>(e.end_us - e.start_us);
  std::string lane_lower = lower(lane);
  bool horovod = std::string_view(e.file_type()).empty();
  if (lane_lower.find("cpu") != std::string::npos) {
    cpu_[lane][e.name] += dur;
  } else if (lane_lower.find("gpu") != std::string::npos) {
    gpu_[lane][e.name] += dur;
    gpu_lanes_ = static_cast<double>(gpu_.size());
  } else if (lane.find("Step") != std::string::npos) {
    if (options_.others && e.args.contains("step_num")) {
      if (!loop_start_us_) loop_start_us_ = e.start_us;
      loop_end_us_ = e.end_us;
      step_intervals_.emplace_back(e.start_us, e.end_us);
    }
    step_phases_[lane] += dur;
    if (options_.others && loop_start_us_) {
      if (options_.compat) {
        // smdebug: others = (end - start) - sum(step_phases incl. others) / gpu_counts
        double sum = 0;
        for (const auto& [name, us] : step_phases_) sum += us;
        step_phases_["others"] = static_cast<double>(loop_end_us_ - *loop_start_us_) - sum / gpu_lanes_;
      } else if (!step_phases_.contains("others")) {
        step_phases_["others"] = 0;  // keeps smdebug's key order; computed in finish()
      }
    }
  } else if (lane == "Forward-SubModuleInternal") {
    forward_[e.name] += dur;
  } else if (lane == "Backward-SubModuleInternal") {
    backward_[e.name] += dur;
  } else if (lane.find(":CPU") == std::string::npos && lane.find(":GPU") == std::string::npos && !horovod) {
    general_[lane] += dur;
  } else if (horovod) {
    horovod_[e.name] += dur;
  }
}

std::vector<OperatorShare> filter_operators(const OrderedMap<std::string, OrderedMap<std::string, double>>& lanes,
                                            double threshold) {
  OrderedMap<std::string, double> operators;
  for (const auto& [lane, ops] : lanes) {
    for (const auto& [name, us] : ops) operators[name] += us;
  }
  double total = 0;
  for (const auto& [name, us] : operators) total += us;
  std::vector<OperatorShare> kept;
  if (total <= 0) return kept;
  for (const auto& [name, us] : operators) {
    double percent = us / total * 100;
    if (percent > threshold) kept.push_back(OperatorShare{name, percent, us});
  }
  double kept_total = 0;
  for (const auto& share : kept) kept_total += share.percent;
  for (auto& share : kept) share.percent = share.percent / kept_total * 100;
  return kept;
}

void FrameworkBreakdown::finish() {
  if (options_.others && !options_.compat && loop_start_us_) step_phases_["others"] = outside_steps();
}

// The training loop's span minus the union of step intervals.
double FrameworkBreakdown::outside_steps() const {
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

namespace {

template <class Map>
double sum_values(const Map& map) {
  double total = 0;
  for (const auto& [key, value] : map) total += value;
  return total;
}

double lane_total(const OrderedMap<std::string, double>& ops) { return sum_values(ops); }

}  // namespace

void FrameworkBreakdown::write(Json& details, bool compat, RatioOrder order) const {
  // ratio: share of each CPU/GPU lane in their combined time.
  std::vector<std::string> labels;
  std::vector<double> totals;
  const bool gpu_first = order == RatioOrder::gpu_first;
  for (const auto& [lane, ops] : gpu_first ? gpu_ : cpu_) labels.push_back(lane);
  for (const auto& [lane, ops] : gpu_first ? cpu_ : gpu_) labels.push_back(lane);
  // smdebug's bottleneck rules list CPU then GPU labels but GPU then CPU totals.
  const bool totals_gpu_first = gpu_first || compat;
  for (const auto& [lane, ops] : totals_gpu_first ? gpu_ : cpu_) totals.push_back(lane_total(ops));
  for (const auto& [lane, ops] : totals_gpu_first ? cpu_ : gpu_) totals.push_back(lane_total(ops));
  double all = 0;
  for (double t : totals) all += t;
  details["ratio"] = Json::object();
  if (all > 0) {
    for (size_t i = 0; i < labels.size(); ++i) details["ratio"][labels[i]] = totals[i] / all * 100.0;
  }
  auto write_operators = [&](const char* key, const char* total_key, const auto& lanes) {
    if (lanes.empty()) return;
    details[key] = Json::object();
    details[total_key] = Json::object();
    for (const auto& share : filter_operators(lanes, 2)) {
      details[key][share.name] = share.percent;
      details[total_key][share.name] = share.total_us;
    }
  };
  write_operators("CPU", "CPU_total", cpu_);
  write_operators("GPU", "GPU_total", gpu_);

  details["phase"] = Json::object();
  details["phase_time"] = Json::object();
  double phase_total = sum_values(step_phases_);
  if (phase_total > 0) {
    for (const auto& [lane, us] : step_phases_) details["phase"][lane] = us / phase_total * 100;
  }
  double general_total = sum_values(general_);
  if (!general_.empty() && general_total > 0) {
    details["general"] = Json::object();
    for (const auto& [lane, us] : general_) details["general"][lane] = us / general_total * 100;
  }
  if (!forward_.empty() && !backward_.empty()) {
    double f = sum_values(forward_), b = sum_values(backward_);
    if (f + b > 0) {
      details["forward_backward"] = Json::object();
      details["forward_backward"]["Forward pass"] = f / (f + b) * 100;
      details["forward_backward"]["Backward pass"] = b / (f + b) * 100;
    }
  }
  if (!horovod_.empty()) {
    double total = sum_values(horovod_);
    std::vector<std::pair<std::string, double>> kept;
    for (const auto& [name, us] : horovod_) {
      if (us > 0 && us / total > 0.02) kept.emplace_back(name, us);
    }
    double kept_total = 0;
    for (const auto& [name, us] : kept) kept_total += us;
    details["horovod"] = Json::object();
    for (const auto& [name, us] : kept) details["horovod"][name] = us / kept_total * 100;
  }
}

}  // namespace sprof::rules
