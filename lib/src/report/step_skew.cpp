// Step-time skew across ranks and nodes: the straggler of a data-parallel job, whose slow steps
// every other rank waits for at the next collective.

#include <algorithm>
#include <map>

#include "sprof/analyze.hpp"
#include "sprof/trace_events.hpp"

namespace sprof::report {
namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double at = q * double(v.size() - 1);
  size_t lo = size_t(at);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - double(lo));
}

}  // namespace

std::optional<AnalyzeReport::StepSkew> step_skew(const std::vector<StepRecord>& steps,
                                                 const std::map<std::string, std::string>& ranks) {
  std::map<std::string, size_t> per_mode;
  for (const auto& s : steps) ++per_mode[s.mode];
  if (per_mode.empty()) return std::nullopt;
  std::string mode = per_mode.contains("TRAIN")
                         ? std::string("TRAIN")
                         : std::max_element(per_mode.begin(), per_mode.end(), [](const auto& a, const auto& b) {
                             return a.second < b.second;
                           })->first;
  std::map<std::string, std::vector<double>> by_node;
  for (const auto& s : steps) {
    if (s.mode == mode) by_node[s.node].push_back(s.seconds());
  }
  if (by_node.size() < 2) return std::nullopt;

  AnalyzeReport::StepSkew skew;
  skew.mode = mode;
  std::map<std::string, std::vector<double>> by_host;
  std::map<std::string, size_t> host_ranks;
  for (const auto& [node, times] : by_node) {
    AnalyzeReport::RankStepTimes r;
    r.node_id = node;
    auto [pid, host] = store::split_node_id(node);
    r.host = host;
    auto rank = ranks.find(node);
    if (rank == ranks.end() && !pid.empty()) rank = ranks.find(pid + "-" + host);
    if (rank != ranks.end()) r.rank = rank->second;
    r.steps = times.size();
    double sum = 0;
    for (double t : times) sum += t;
    r.mean_s = sum / double(times.size());
    r.median_s = quantile(times, 0.5);
    r.p95_s = quantile(times, 0.95);
    skew.ranks.push_back(r);
    auto& all = by_host[r.host];
    all.insert(all.end(), times.begin(), times.end());
    ++host_ranks[r.host];
  }
  auto rank_number = [](const std::string& r) { return r.empty() ? INT64_MAX : std::atoll(r.c_str()); };
  std::sort(skew.ranks.begin(), skew.ranks.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(rank_number(a.rank), a.node_id) < std::make_pair(rank_number(b.rank), b.node_id);
  });
  auto fastest = std::min_element(skew.ranks.begin(), skew.ranks.end(),
                                  [](const auto& a, const auto& b) { return a.median_s < b.median_s; });
  auto slowest = std::max_element(skew.ranks.begin(), skew.ranks.end(),
                                  [](const auto& a, const auto& b) { return a.median_s < b.median_s; });
  double base = fastest->median_s;
  for (auto& r : skew.ranks) r.vs_fastest = base > 0 ? r.median_s / base - 1 : 0;
  skew.straggler = slowest->node_id;
  skew.skew = slowest->vs_fastest;
  for (const auto& [host, times] : by_host) {
    AnalyzeReport::NodeStepTimes n;
    n.host = host;
    n.ranks = host_ranks[host];
    n.steps = times.size();
    n.median_s = quantile(times, 0.5);
    skew.nodes.push_back(n);
  }
  if (skew.nodes.size() > 1) {
    double node_base = std::min_element(skew.nodes.begin(), skew.nodes.end(), [](const auto& a, const auto& b) {
                         return a.median_s < b.median_s;
                       })->median_s;
    for (auto& n : skew.nodes) n.vs_fastest = node_base > 0 ? n.median_s / node_base - 1 : 0;
    skew.straggler_node = std::max_element(skew.nodes.begin(), skew.nodes.end(), [](const auto& a, const auto& b) {
                            return a.median_s < b.median_s;
                          })->host;
  }
  return skew;
}

}  // namespace sprof::report
