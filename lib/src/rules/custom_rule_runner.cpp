// Custom rules evaluated again and again (sprof/custom_rules.hpp): threshold rules over all the
// data each time; rule programs kept running and sent what is new.

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rules/custom_rule_model.hpp"
#include "rules/rule_program.hpp"
#include "sprof/markup.hpp"
#include "common/json_text.hpp"

namespace sprof::rules {
namespace {

using nlohmann::json;

constexpr size_t kTopFunctions = 10;

// One JSON line. Names from a Python 2 target can be bytes that are not UTF-8: replaced, not thrown.
template <typename J>
std::string dump_json(const J& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

struct ProgramState {
  const ProgramRule* rule = nullptr;
  std::unique_ptr<RuleProgram> process;
  bool started = false;
  bool disabled = false;
  bool closed = false;
  int64_t seq = 0;
  int64_t steps_sent = 0;
  std::set<std::tuple<std::string, int64_t, std::string, int64_t, int64_t>> sent_steps;
  std::map<std::string, int64_t> sent_tick_us;  // per node, the last tick sent
  RuleResult last;
};

std::optional<std::string> take_text(const json& v, const char* key, RuleResult& r, std::string RuleResult::*field) {
  if (!v.contains(key)) return std::nullopt;
  if (!v[key].is_string()) return fmt::format("\"{}\" is not a string", key);
  r.*field = v[key].get<std::string>();
  return std::nullopt;
}

// The verdict object as a result, or why it is not one.
Result<RuleResult> verdict_result(const json& v, const ProgramRule& rule, int64_t steps_sent) {
  RuleResult r;
  r.rule = rule.name;
  r.recommendation = rule.recommendation;
  r.rule_parameters = fmt::format("program:{}", fmt::join(rule.argv, " "));
  auto bad = [&](std::string why) {
    // The verdict as the program wrote it, cut short: a line may hold up to 1 MiB.
    std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 200) text = fmt::format("{}... ({} bytes)", text.substr(0, 200), text.size());
    return make_error(ErrorKind::runtime, "its verdict {}: {}", text, why);
  };
  if (!v.contains("status") || !v["status"].is_string()) return bad("no \"status\"");
  std::string status = v["status"].get<std::string>();
  if (status == "IssuesFound") {
    r.status = RuleStatus::issues_found;
  } else if (status == "NoIssuesFound") {
    r.status = RuleStatus::no_issues_found;
  } else if (status == "NoData") {
    r.status = RuleStatus::no_data;
  } else {
    return bad("\"status\" is not IssuesFound, NoIssuesFound or NoData");
  }
  auto count = [&](const char* key, int64_t fallback) -> Result<int64_t> {
    if (!v.contains(key)) return fallback;
    if (!v[key].is_number_integer() || v[key].get<int64_t>() < 0) {
      return make_error(ErrorKind::runtime, "\"{}\" is not a count", key);
    }
    return v[key].get<int64_t>();
  };
  auto triggered = count("triggered", r.status == RuleStatus::issues_found ? 1 : 0);
  if (!triggered.ok()) return bad(triggered.error().message);
  r.triggered = *triggered;
  auto violations = count("violations", r.triggered);
  if (!violations.ok()) return bad(violations.error().message);
  r.violations = *violations;
  auto datapoints = count("datapoints", steps_sent);
  if (!datapoints.ok()) return bad(datapoints.error().message);
  r.datapoints = *datapoints;
  if (auto why = take_text(v, "message", r, &RuleResult::evidence)) return bad(*why);
  if (auto why = take_text(v, "recommendation", r, &RuleResult::recommendation)) return bad(*why);
  if (v.contains("details")) {
    if (!v["details"].is_object()) return bad("\"details\" is not an object");
    r.details_json = v["details"].dump();
  }
  if (v.contains("parameters")) {
    if (v["parameters"].is_string()) {
      r.rule_parameters = v["parameters"].get<std::string>();
    } else if (v["parameters"].is_object()) {
      std::vector<std::string> lines;
      for (auto it = v["parameters"].begin(); it != v["parameters"].end(); ++it) {
        lines.push_back(fmt::format("{}:{}", it.key(), it->is_string() ? it->get<std::string>() : it->dump()));
      }
      r.rule_parameters = fmt::format("{}", fmt::join(lines, "\n"));
    } else {
      return bad("\"parameters\" is neither a string nor an object");
    }
  }
  return r;
}

// A line of the program's output, shortened and without control bytes, for a message.
std::string shown(std::string_view line) {
  std::string s = terminal_safe(line.substr(0, 80));
  return line.size() > 80 ? s + "..." : s;
}

RuleResult disabled_result(const ProgramRule& rule, const std::string& why) {
  RuleResult r;
  r.rule = rule.name;
  r.status = RuleStatus::no_data;
  r.evidence = "rule program disabled: " + why;
  r.recommendation = rule.recommendation;
  r.rule_parameters = fmt::format("program:{}", fmt::join(rule.argv, " "));
  r.details_json = json{{"disabled", why}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

json start_record(const RulesInput& input, const ProgramRule& rule, bool live) {
  json start = {{"type", "start"}, {"rule", rule.name}, {"live", live},
                {"profile", input.profile ? input.profile->dir().string() : std::string()}};
  if (!input.profile) return start;
  auto read = input.profile->manifest();
  if (!read.ok()) return start;
  const store::Manifest* manifest = *read;
  start["command"] = manifest->command;
  start["host"] = manifest->host;
  start["pid"] = manifest->target_pid;
  start["start_us"] = manifest->to_epoch_us(manifest->start_ns);
  start["rate_hz"] = manifest->rate_hz;
  for (const auto& p : manifest->processes) {
    if (p.pid == manifest->target_pid && !p.python_version.empty()) start["python"] = p.python_version;
  }
  return start;
}

}  // namespace

Result<RuleResult> read_verdict(std::string_view line, const ProgramRule& rule, int64_t seq, int64_t steps_sent) {
  // A parser that recurses per level overflows the stack on 100,000 nested brackets.
  if (!store::json_depth_within(line)) {
    return make_error(ErrorKind::runtime, "it wrote a verdict nested deeper than {} levels", store::kMaxJsonDepth);
  }
  json answer = json::parse(line, nullptr, false);
  if (answer.is_discarded() || !answer.is_object() || !answer.contains("seq") || !answer["seq"].is_number_integer()) {
    return make_error(ErrorKind::runtime, "it wrote \"{}\", not a verdict (a JSON object with \"seq\")", shown(line));
  }
  if (answer["seq"].get<int64_t>() != seq) {
    return make_error(ErrorKind::runtime, "it answered evaluation {} when asked for {}", answer["seq"].get<int64_t>(), seq);
  }
  return verdict_result(answer, rule, steps_sent);
}

struct CustomRuleRunner::Impl {
  CustomRules rules;
  bool live = false;
  std::vector<const ThresholdRule*> thresholds;
  std::vector<ProgramState> programs;

  bool needs_functions() const {
    if (std::any_of(thresholds.begin(), thresholds.end(),
                    [](const ThresholdRule* t) { return t->metric == CustomMetric::function; })) {
      return true;
    }
    return std::any_of(programs.begin(), programs.end(), [](const ProgramState& p) { return !p.disabled; });
  }

  RuleResult evaluate_program(ProgramState& p, const RulesInput& input, const RuleRecords& records, bool final) {
    if (p.disabled || p.closed) return p.last;
    std::string lines;
    if (!p.started) {
      lines += dump_json(start_record(input, *p.rule, live));
      p.started = true;
    }
    // New steps and ticks, merged in time order.
    std::vector<std::pair<int64_t, std::string>> fresh;
    for (const auto& s : records.steps) {
      if (s.samples_pending) continue;  // sent when its samples are written, with its functions
      auto key = std::make_tuple(s.node, s.pid, s.mode, s.step, s.start_us);
      if (!p.sent_steps.insert(key).second) continue;
      fresh.emplace_back(s.end_us, dump_json(step_record_json(s, kTopFunctions)));
      ++p.steps_sent;
    }
    std::map<std::string, int64_t> newest = p.sent_tick_us;
    for (const auto& t : records.ticks) {
      auto sent = p.sent_tick_us.find(t.node);
      if (sent != p.sent_tick_us.end() && t.timestamp_us <= sent->second) continue;
      fresh.emplace_back(t.timestamp_us, dump_json(tick_record_json(t)));
      int64_t& n = newest[t.node];
      n = std::max(n, t.timestamp_us);
    }
    p.sent_tick_us = std::move(newest);
    std::stable_sort(fresh.begin(), fresh.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& entry : fresh) lines += entry.second;
    fresh.clear();

    auto answer = p.process->exchange(std::move(lines), ++p.seq, final);
    Result<RuleResult> result = answer.ok() ? read_verdict(*answer, *p.rule, p.seq, p.steps_sent)
                                            : Result<RuleResult>(std::move(answer).error());
    if (!result.ok()) {
      p.disabled = true;
      p.process.reset();  // kills it
      spdlog::error("rule {} ({}) disabled: {}", p.rule->name, fmt::join(p.rule->argv, " "), result.error().message);
      p.last = disabled_result(*p.rule, result.error().message);
      return p.last;
    }
    p.last = std::move(result).value();
    if (final) {
      p.process->close();
      p.closed = true;
    }
    return p.last;
  }
};

CustomRuleRunner::CustomRuleRunner(const CustomRules& rules, std::vector<std::string> selected, bool live)
    : impl_(std::make_unique<Impl>()) {
  impl_->rules = rules;
  impl_->live = live;
  auto chosen = [&selected](const std::string& name) {
    return selected.empty() || std::find(selected.begin(), selected.end(), name) != selected.end();
  };
  for (const auto& t : impl_->rules.thresholds) {
    if (chosen(t.name)) impl_->thresholds.push_back(&t);
  }
  for (const auto& p : impl_->rules.programs) {
    if (!chosen(p.name)) continue;
    ProgramState state;
    state.rule = &p;
    state.process = std::make_unique<RuleProgram>(p, impl_->rules.timeout_s, impl_->rules.env);
    state.last = disabled_result(p, "never evaluated");
    state.last.evidence = "not evaluated yet";
    impl_->programs.push_back(std::move(state));
  }
}

CustomRuleRunner::~CustomRuleRunner() = default;

std::vector<RuleResult> CustomRuleRunner::evaluate(const RulesInput& input, bool final) {
  RuleRecords records = collect_rule_records(input, impl_->needs_functions(), impl_->live && !final);
  std::vector<RuleResult> results;
  for (const ThresholdRule* t : impl_->thresholds) results.push_back(evaluate_threshold(*t, records));
  for (auto& p : impl_->programs) results.push_back(impl_->evaluate_program(p, input, records, final));
  return results;
}

}  // namespace sprof::rules
