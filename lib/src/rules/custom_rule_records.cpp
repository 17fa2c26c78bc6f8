// The records custom rules read: steps (with their function times) and system ticks.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include <spdlog/spdlog.h>

#include "rules/custom_rule_model.hpp"

namespace sprof::rules {
namespace {

// "Step:ModeKeys.TRAIN" -> "train"; other events -> "".
std::string step_mode(const std::string& name) {
  static constexpr std::string_view prefix = "Step:ModeKeys.";
  size_t at = name.find(prefix);
  if (at == std::string::npos) return {};
  std::string mode = name.substr(at + prefix.size());
  std::transform(mode.begin(), mode.end(), mode.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return mode;
}

// Per process: its samples' function times over each of its steps. Only the functions a step's
// samples touch are visited, so a step costs its samples, not the log's function count.
void add_function_times(const store::ProcessSamples& process, int64_t epoch_offset_ns,
                        std::vector<StepRecord*>& steps) {
  const store::SampleLog& log = process.log;
  const auto& functions = log.functions();
  const auto& frames = log.frames();
  std::vector<double> self(functions.size()), total(functions.size());
  std::vector<uint64_t> seen(functions.size(), 0);
  std::vector<uint32_t> touched;
  uint64_t generation = 0;
  std::vector<uint32_t> stack;
  for (StepRecord* step : steps) {
    double sampled = 0;
    touched.clear();
    int64_t from = step->start_us * 1000 - epoch_offset_ns, to = step->end_us * 1000 - epoch_offset_ns;
    log.for_each_sample(from, to, [&](const store::SampleRecord& s) {
      double w = double(s.weight_ns) / 1e9;
      sampled += w;
      log.stack_frames(s.stack, stack);
      ++generation;
      for (size_t i = 0; i < stack.size(); ++i) {
        uint32_t f = frames[stack[i]].function;
        if (self[f] == 0 && total[f] == 0) touched.push_back(f);
        if (i == 0) self[f] += w;
        if (seen[f] != generation) {
          seen[f] = generation;
          total[f] += w;
        }
      }
    });
    step->sampled = true;
    step->sampled_s = sampled;
    for (uint32_t f : touched) {
      if (total[f] > 0) {
        step->functions.push_back({functions[f].name, functions[f].file, functions[f].first_line, self[f], total[f]});
      }
      self[f] = total[f] = 0;
    }
    std::sort(step->functions.begin(), step->functions.end(), [](const FunctionTime& a, const FunctionTime& b) {
      return std::tie(b.total_s, a.name, a.file) < std::tie(a.total_s, b.name, b.file);
    });
  }
}

constexpr int64_t kFirstChunkWaitUs = 5'000'000;

double round6(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

RuleRecords collect_rule_records(const RulesInput& input, bool with_functions, bool live) {
  RuleRecords records;
  for (const auto& e : input.framework()) {
    std::string mode = step_mode(e.name);
    if (mode.empty() || e.end_us <= e.start_us) continue;
    StepRecord step;
    step.node = e.node_id;
    step.pid = e.pid;
    step.mode = mode;
    step.step = e.args.integer("step_num").value_or(-1);
    step.start_us = e.start_us;
    step.end_us = e.end_us;
    records.steps.push_back(std::move(step));
  }
  std::stable_sort(records.steps.begin(), records.steps.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.end_us < b.end_us; });

  std::map<std::pair<std::string, int64_t>, size_t> tick_index;
  for (const auto& m : input.system) {
    int64_t us = int64_t(std::llround(m.timestamp * 1e6));
    auto [it, added] = tick_index.try_emplace({m.node_id, us}, records.ticks.size());
    if (added) records.ticks.push_back(SystemTick{m.node_id, us, {}});
    records.ticks[it->second].metrics.push_back(&m);
  }
  std::stable_sort(records.ticks.begin(), records.ticks.end(),
                   [](const SystemTick& a, const SystemTick& b) { return a.timestamp_us < b.timestamp_us; });

  if (!with_functions || !input.profile || records.steps.empty()) return records;
  auto samples = input.profile->samples();
  std::set<int64_t> logged;
  if (samples.ok() && (*samples)->manifest) {
    records.samples = !(*samples)->processes.empty();
    int64_t offset = (*samples)->manifest->epoch_offset_ns();
    for (const auto& process : (*samples)->processes) {
      std::vector<StepRecord*> mine;
      for (auto& step : records.steps) {
        if (step.pid == process.log.pid()) mine.push_back(&step);
      }
      add_function_times(process, offset, mine);
      logged.insert(process.log.pid());
      // The sampler writes its log in chunks: the newest steps may have no samples on disk yet.
      int64_t written_us = (process.log.last_ns() + offset) / 1000;
      for (StepRecord* step : mine) step->samples_pending = live && step->end_us > written_us;
    }
  } else if (!samples.ok()) {
    spdlog::debug("custom rules: no samples: {}", samples.error().message);
  }
  if (!live) return records;
  // A process whose log has no chunk yet: its steps wait a few seconds for one.
  int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  for (auto& step : records.steps) {
    if (!logged.contains(step.pid) && now_us - step.end_us < kFirstChunkWaitUs) step.samples_pending = true;
  }
  return records;
}

nlohmann::ordered_json step_record_json(const StepRecord& step, size_t top) {
  nlohmann::ordered_json j = {{"type", "step"},     {"node", step.node},         {"pid", step.pid},
                              {"mode", step.mode},  {"step", step.step},         {"start_us", step.start_us},
                              {"end_us", step.end_us}, {"duration_s", round6(step.duration_s())}};
  if (step.sampled) {
    j["sampled_s"] = round6(step.sampled_s);
    auto& functions = j["functions"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < step.functions.size() && i < top; ++i) {
      const FunctionTime& f = step.functions[i];
      functions.push_back({{"function", f.name},
                           {"file", f.file},
                           {"line", f.line},
                           {"self_s", round6(f.self_s)},
                           {"total_s", round6(f.total_s)}});
    }
  }
  return j;
}

nlohmann::ordered_json tick_record_json(const SystemTick& tick) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto* m : tick.metrics) {
    // smdebug's records name the figure by Dimension and the device by Name; the host's memory
    // record has Name "MemoryUsedPercent" and no Dimension.
    const std::string& group = m->dimension.empty() ? m->type : m->dimension;
    metrics[group][m->name] = m->value;
  }
  return {{"type", "system"}, {"node", tick.node}, {"timestamp_us", tick.timestamp_us}, {"metrics", metrics}};
}

}  // namespace sprof::rules
