// Training-loop iterations (sprof/iterations.hpp): the wait before each step and what covered it.

#include "sprof/iterations.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "rules/numeric.hpp"

namespace sprof::rules {
namespace {

bool is_input_lane(const std::string& lane) {
  return lane == "DataLoaderIter" || lane == "DataLoaderIterInitialize" || lane == "DataIterator";
}

using ProcessKey = std::pair<std::string, int64_t>;  // node, pid

// The part of [from, to) that `ranges` (sorted, disjoint) cover.
int64_t covered(const std::vector<TimeRange>& ranges, int64_t from, int64_t to) {
  int64_t sum = 0;
  auto it = std::lower_bound(ranges.begin(), ranges.end(), from,
                             [](const TimeRange& r, int64_t t) { return r.second <= t; });
  for (; it != ranges.end() && it->first < to; ++it) sum += std::min(to, it->second) - std::max(from, it->first);
  return sum;
}

Spread spread(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  s.mean = mean(values);
  std::sort(values.begin(), values.end());
  s.p50 = quantile_sorted(values, 0.50);
  s.p95 = quantile_sorted(values, 0.95);
  s.max = values.back();
  return s;
}

}  // namespace

std::vector<StepSpan> step_spans(const std::vector<store::TraceEvent>& framework) {
  constexpr std::string_view kPrefix = "Step:ModeKeys";
  std::vector<StepSpan> steps;
  for (const auto& e : framework) {
    size_t at = e.name.find(kPrefix);
    if (at == std::string::npos) continue;
    StepSpan s;
    s.node = e.node_id;
    s.mode = e.name.substr(at + kPrefix.size());
    if (!s.mode.empty() && s.mode.front() == '.') s.mode.erase(0, 1);
    if (s.mode.empty()) s.mode = e.name;
    s.step = e.args.text("step_num").value_or("");
    s.pid = e.pid;
    s.start_us = e.start_us;
    s.end_us = e.end_us;
    steps.push_back(std::move(s));
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const StepSpan& a, const StepSpan& b) { return a.start_us < b.start_us; });
  return steps;
}

std::vector<Iteration> iterations(const std::vector<StepSpan>& steps, const std::vector<store::TraceEvent>& framework) {
  std::map<ProcessKey, std::vector<TimeRange>> input;
  for (const auto& e : framework) {
    if (is_input_lane(e.lane)) input[{e.node_id, e.pid}].push_back({e.start_us, e.end_us});
  }
  for (auto& [key, ranges] : input) ranges = union_of(std::move(ranges));

  std::vector<Iteration> out;
  out.reserve(steps.size());
  std::map<ProcessKey, int64_t> previous_end;  // the latest step end seen per process
  for (const StepSpan& s : steps) {
    Iteration it;
    it.step = s;
    it.wait_start_us = s.start_us;
    ProcessKey key{s.node, s.pid};
    auto found = input.find(key);
    auto prev = previous_end.find(key);
    if (prev != previous_end.end()) {
      it.measured = true;
      it.wait_start_us = std::min(s.start_us, prev->second);
    } else if (found != input.end() && !found->second.empty() && found->second.front().first < s.start_us) {
      it.measured = true;
      it.wait_start_us = found->second.front().first;
    }
    if (it.measured && found != input.end()) it.dataloader_us = covered(found->second, it.wait_start_us, s.start_us);
    int64_t& end = previous_end[key];
    end = prev != previous_end.end() ? std::max(end, s.end_us) : s.end_us;
    out.push_back(std::move(it));
  }
  return out;
}

std::vector<IterationStats> iteration_stats(const std::vector<Iteration>& iterations) {
  struct Values {
    std::vector<double> iteration, step, wait;
    double dataloader_s = 0;
    std::vector<ProcessKey> processes;
  };
  std::map<std::string, Values> by_mode;
  for (const Iteration& it : iterations) {
    if (!it.measured) continue;
    Values& v = by_mode[it.step.mode];
    v.iteration.push_back(it.iteration_s());
    v.step.push_back(it.step_s());
    v.wait.push_back(it.wait_s());
    v.dataloader_s += static_cast<double>(it.dataloader_us) / 1e6;
    ProcessKey key{it.step.node, it.step.pid};
    if (std::find(v.processes.begin(), v.processes.end(), key) == v.processes.end()) v.processes.push_back(key);
  }
  std::vector<IterationStats> out;
  for (auto& [mode, v] : by_mode) {
    IterationStats s;
    s.mode = mode;
    s.iterations = v.iteration.size();
    s.processes = v.processes.size();
    s.iteration_s = pairwise_sum(v.iteration);
    s.step_s = pairwise_sum(v.step);
    s.wait_s = pairwise_sum(v.wait);
    s.dataloader_s = v.dataloader_s;
    s.iteration = spread(std::move(v.iteration));
    s.step = spread(std::move(v.step));
    s.wait = spread(std::move(v.wait));
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const IterationStats& a, const IterationStats& b) {
    return std::make_tuple(a.mode != "TRAIN", -static_cast<int64_t>(a.iterations)) <
           std::make_tuple(b.mode != "TRAIN", -static_cast<int64_t>(b.iterations));
  });
  return out;
}

std::optional<IterationStats> training_loop(const std::vector<Iteration>& iterations) {
  auto stats = iteration_stats(iterations);
  if (stats.empty()) return std::nullopt;
  return stats.front();
}

std::optional<IterationStats> training_loop(const std::vector<store::TraceEvent>& framework) {
  return training_loop(iterations(step_spans(framework), framework));
}

const char* input_bound_class(double wait_share) {
  if (wait_share >= kHighlyInputBoundShare) return "highly input-bound";
  if (wait_share >= kModeratelyInputBoundShare) return "moderately input-bound";
  return "not input-bound";
}

std::string loop_headline(const IterationStats& loop, std::string_view waiting_in) {
  std::string where;
  if (loop.dataloader_s > 0) {
    where = fmt::format(" (DataLoader {:.1f}%)", 100 * loop.dataloader_share());
  } else if (!waiting_in.empty()) {
    where = fmt::format(" (in {})", waiting_in);
  }
  return fmt::format("training loop ({}, {} iteration{}): {:.1f}% waiting for input{}, {:.1f}% in steps: {}",
                     loop.mode, loop.iterations, loop.iterations == 1 ? "" : "s", 100 * loop.wait_share(), where,
                     100 * loop.step_share(), input_bound_class(loop.wait_share()));
}

}  // namespace sprof::rules
