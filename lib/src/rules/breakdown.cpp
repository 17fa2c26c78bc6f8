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
  } else if (lane.find("Step") != std::string::npos) {
    step_phases_[lane] += dur;
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

namespace {

template <class Map>
double sum_values(const Map& map) {
  double total = 0;
  for (const auto& [key, value] : map) total += value;
  return total;
}

double lane_total(const OrderedMap<std::string, double>& ops) { return sum_values(ops); }

}  // namespace

void FrameworkBreakdown::write(Json& details, bool compat) const {
  // ratio: share of each CPU/GPU lane in their combined time.
  std::vector<std::string> labels;
  std::vector<double> totals;
  for (const auto& [lane, ops] : cpu_) labels.push_back(lane);
  for (const auto& [lane, ops] : gpu_) labels.push_back(lane);
  if (compat) {
    // smdebug lists CPU then GPU labels but GPU then CPU totals.
    for (const auto& [lane, ops] : gpu_) totals.push_back(lane_total(ops));
    for (const auto& [lane, ops] : cpu_) totals.push_back(lane_total(ops));
  } else {
    for (const auto& [lane, ops] : cpu_) totals.push_back(lane_total(ops));
    for (const auto& [lane, ops] : gpu_) totals.push_back(lane_total(ops));
  }
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
