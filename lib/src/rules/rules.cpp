// Loads a profile, checks rule names and parameters, cuts the data into windows and runs the rules.

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/custom_rules.hpp"
#include "rules/breakdown.hpp"
#include "rules/gpu_utilization.hpp"
#include "rules/registry.hpp"

namespace fs = std::filesystem;

namespace sprof::rules {

const char* to_string(RuleStatus status) {
  switch (status) {
    case RuleStatus::issues_found: return "IssuesFound";
    case RuleStatus::no_issues_found: return "NoIssuesFound";
    case RuleStatus::no_data: return "NoData";
  }
  return "NoData";
}

std::string report_json(const RuleResult& result) {
  Json report = Json::object();
  report["RuleTriggered"] = result.triggered;
  report["Violations"] = result.violations;
  report["Details"] = Json::parse(result.details_json, nullptr, false);
  if (report["Details"].is_discarded()) report["Details"] = Json::object();
  report["Datapoints"] = result.datapoints;
  report["RuleParameters"] = result.rule_parameters;
  return report.dump();
}

const std::vector<store::TraceEvent>& RulesInput::framework() const {
  static const std::vector<store::TraceEvent> none;
  return framework_events ? *framework_events : none;
}

Result<RulesInput> load_rules_input(const query::Profile& profile) {
  if (!profile.contents().profile()) return profile.not_a_profile();
  if (!profile.contents().rule_data()) {
    // sprof's samples alone: the rules read smdebug's system metrics and framework timeline.
    return make_error(ErrorKind::bad_input, "{}: no rule data (neither system/ nor framework/)",
                      profile.dir().string());
  }
  RulesInput input;
  input.profile = profile;
  SPROF_TRY(auto system, profile.system_metrics());
  input.system = *system;
  SPROF_TRY(auto traces, profile.trace_events());
  SPROF_TRY(input.framework_events, profile.shared_trace_events());
  input.warnings = traces->warnings;
  input.system_hosts = profile.system_hosts();
  // GPUUtilization from the kernels, when NVML gave none; `sprof gpu` and analyze say why a
  // trace or manifest could not be read.
  if (profile.contents().gpu && !has_dimension(input, "GPUUtilization")) {
    auto trace = profile.gpu_activity();
    if (trace.ok() && profile.manifest().ok()) add_kernel_utilization(**trace, profile.epoch_offset_ns(), input);
  }
  return input;
}

void add_kernel_utilization(const store::GpuTrace& trace, int64_t epoch_offset_ns, RulesInput& input) {
  auto derived = gpu_utilization_from_kernels(trace, input.system, epoch_offset_ns);
  if (derived.empty()) return;
  input.warnings.push_back(fmt::format(
      "GPUUtilization taken from the {} kernels recorded in gpu/ (no NVML metrics in system/)",
      std::count_if(trace.ops.begin(), trace.ops.end(),
                    [](const store::GpuOp& op) { return op.kind == store::GpuOpKind::kernel; })));
  spdlog::info("{}", input.warnings.back());
  input.system.insert(input.system.end(), std::make_move_iterator(derived.begin()),
                      std::make_move_iterator(derived.end()));
}

namespace {

const RuleDef* find_rule(const std::string& name) {
  std::string wanted = lower(name);
  for (const auto& def : rule_definitions()) {
    if (lower(def.info.name) == wanted) return &def;
  }
  return nullptr;
}

std::string joined_names(bool overridable_only) {
  std::vector<std::string> names;
  for (const auto& def : rule_definitions()) {
    if (!overridable_only || def.info.overridable) names.push_back(def.info.name);
  }
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

Result<std::vector<Params>> resolve_params(const std::vector<std::string>& overrides) {
  const auto& defs = rule_definitions();
  std::vector<Params> params;
  for (const auto& def : defs) params.push_back(default_params(def.info));
  for (const auto& text : overrides) {
    size_t eq = text.find('=');
    if (eq == std::string::npos) {
      return make_error(ErrorKind::usage, "--param '{}': expected <Rule>_<parameter>=<value>", text);
    }
    std::string key = text.substr(0, eq), value = text.substr(eq + 1);
    if (lower(key) == "opt_out_telemetry") {
      std::string v = lower(value);
      if (v != "true" && v != "false" && v != "1" && v != "0") {
        return make_error(ErrorKind::usage, "--param opt_out_telemetry: '{}' is not true or false", value);
      }
      continue;  // sprof sends no telemetry; accepted for ProfilerReport compatibility
    }
    size_t underscore = key.find('_');
    if (underscore == std::string::npos || underscore == 0 || underscore + 1 == key.size()) {
      return make_error(ErrorKind::usage, "--param '{}': key '{}' does not follow <Rule>_<parameter>", text, key);
    }
    std::string rule_name = key.substr(0, underscore);
    std::string param_name = lower(key.substr(underscore + 1));
    const RuleDef* def = find_rule(rule_name);
    if (def == nullptr || !def->info.overridable) {
      return make_error(ErrorKind::usage,
                        "--param '{}': {} is not a rule whose parameters can be set; valid rule names (case "
                        "insensitive): {}",
                        text, rule_name, joined_names(true));
    }
    auto info = std::find_if(def->info.params.begin(), def->info.params.end(),
                             [&](const ParamInfo& p) { return p.name == param_name; });
    if (info == def->info.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : def->info.params) names.push_back(p.name);
      return make_error(ErrorKind::usage, "--param '{}': {} is not a parameter of {}; valid parameters: {}", text,
                        param_name, def->info.name, fmt::join(names, ", "));
    }
    SPROF_TRY(ParamValue parsed, parse_param_value(def->info.name, *info, value));
    params[def - defs.data()].set(param_name, std::move(parsed));
  }
  return params;
}

int64_t to_us(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e6)); }

// The data in time order (stable: records of one tick keep their file order).
struct Timeline {
  std::vector<const store::SystemMetric*> system;
  std::vector<int64_t> system_us;
  std::vector<const store::TraceEvent*> framework;
  int64_t first_us = 0;  // floored to the UTC minute
  int64_t last_us = 0;
  bool empty = true;
  std::optional<IterationStats> training_loop;
};

Timeline make_timeline(const RulesInput& input) {
  Timeline t;
  t.training_loop = training_loop(input.framework());
  for (const auto& m : input.system) t.system.push_back(&m);
  std::stable_sort(t.system.begin(), t.system.end(),
                   [](const auto* a, const auto* b) { return a->timestamp < b->timestamp; });
  for (const auto* m : t.system) t.system_us.push_back(to_us(m->timestamp));
  for (const auto& e : input.framework()) t.framework.push_back(&e);
  std::stable_sort(t.framework.begin(), t.framework.end(),
                   [](const auto* a, const auto* b) { return a->start_us < b->start_us; });
  if (t.system.empty() && t.framework.empty()) return t;
  t.empty = false;
  int64_t first = INT64_MAX, last = INT64_MIN;
  if (!t.system.empty()) {
    first = std::min(first, t.system_us.front());
    last = std::max(last, t.system_us.back());
  }
  if (!t.framework.empty()) {
    first = std::min(first, t.framework.front()->start_us);
    last = std::max(last, t.framework.back()->start_us);
  }
  constexpr int64_t minute = 60000000;
  t.first_us = first >= 0 ? first / minute * minute : -((-first + minute - 1) / minute) * minute;
  t.last_us = last;
  return t;
}

Result<RuleResult> run_one(const RuleDef& def, const Params& params, const RulesInput& input, const Timeline& timeline,
                           bool compat) {
  RuleContext context{&input, compat, timeline.first_us, &timeline.training_loop};
  std::unique_ptr<Rule> rule = def.make(params, context);
  rule->set_system_hosts(&input.system_hosts);
  int64_t scan = params.integer("scan_interval_us");
  if (!timeline.empty) {
    int64_t windows = (timeline.last_us - timeline.first_us) / scan + 1;
    if (windows > 20000000) {
      return make_error(ErrorKind::usage, "{}_scan_interval_us={} cuts this profile into {} windows; use a larger one",
                        def.info.name, scan, windows);
    }
    size_t i_sys = 0, i_fw = 0;
    Window window;
    for (int64_t start = timeline.first_us; start <= timeline.last_us; start += scan) {
      window.start_us = start;
      window.end_us = start + scan;
      window.system.clear();
      window.framework.clear();
      while (i_sys < timeline.system.size() && timeline.system_us[i_sys] < window.end_us) {
        window.system.push_back(timeline.system[i_sys++]);
      }
      while (i_fw < timeline.framework.size() && timeline.framework[i_fw]->start_us < window.end_us) {
        window.framework.push_back(timeline.framework[i_fw++]);
      }
      rule->on_window(window);
    }
  }
  rule->finish();
  RuleResult result;
  result.rule = def.info.name;
  result.triggered = rule->triggered();
  result.violations = rule->violations();
  result.datapoints = rule->datapoints();
  result.details_json = rule->details().dump();
  result.rule_parameters = rule->rule_parameters();
  result.recommendation = def.info.recommendation;
  if (auto missing = def.missing_input(input)) {
    result.status = RuleStatus::no_data;
    result.evidence = *missing;
  } else if (auto nothing = rule->nothing_to_judge(); nothing && result.triggered == 0) {
    result.status = RuleStatus::no_data;
    result.evidence = *nothing;
  } else {
    result.status = result.triggered > 0 ? RuleStatus::issues_found : RuleStatus::no_issues_found;
    result.evidence = rule->evidence();
  }
  return result;
}

}  // namespace

namespace {

struct Selection {
  std::vector<bool> builtin;        // by rule_definitions() index
  std::vector<bool> named;          // named on the command line (not only through ProfilerReport)
  bool report = false;              // ProfilerReport: all built-ins, summed up first
  std::vector<std::string> custom;  // custom rules named (all when `all_custom`)
  bool all_custom = false;
  std::vector<Params> params;
};

Result<Selection> select_rules(const RulesOptions& options) {
  const auto& defs = rule_definitions();
  Selection selection;
  selection.builtin.assign(defs.size(), false);
  selection.named.assign(defs.size(), false);
  selection.report = options.rules.empty();
  selection.all_custom = options.rules.empty() && options.custom != nullptr;
  for (const auto& name : options.rules) {
    if (lower(name) == "profilerreport") {
      selection.report = true;
      continue;
    }
    if (const RuleDef* def = find_rule(name)) {
      selection.builtin[def - defs.data()] = true;
      selection.named[def - defs.data()] = true;
      continue;
    }
    if (options.custom != nullptr) {
      if (auto custom = options.custom->find(name)) {
        selection.custom.push_back(*custom);
        continue;
      }
    }
    std::string custom_names;
    if (options.custom != nullptr) {
      for (const auto& info : options.custom->catalog()) custom_names += ", " + info.name;
    }
    return make_error(ErrorKind::usage, "unknown rule '{}'; valid rules (case insensitive): ProfilerReport, {}{}", name,
                      joined_names(false), custom_names);
  }
  if (selection.report) {
    // smdebug's ProfilerReport runs its eleven; --compat smdebug keeps it to them.
    for (size_t i = 0; i < defs.size(); ++i) {
      selection.builtin[i] = selection.named[i] || !(options.compat_smdebug && defs[i].sprof_only);
    }
  }
  SPROF_TRY(selection.params, resolve_params(options.params));
  for (const auto& text : options.params) {
    size_t underscore = text.find('_');
    const RuleDef* def = underscore == std::string::npos ? nullptr : find_rule(text.substr(0, underscore));
    if (def != nullptr && !selection.builtin[def - defs.data()]) {
      spdlog::warn("--param {} applies to {}, which is not selected", text, def->info.name);
    }
  }
  return selection;
}

}  // namespace

Status check_rules(const RulesOptions& options) {
  SPROF_TRY(auto selection, select_rules(options));
  (void)selection;
  return {};
}

Result<std::vector<RuleResult>> run_rules(const RulesInput& input, const RulesOptions& options) {
  const auto& defs = rule_definitions();
  SPROF_TRY(Selection selection, select_rules(options));
  Timeline timeline = make_timeline(input);
  std::vector<RuleResult> results;
  for (size_t i = 0; i < defs.size(); ++i) {
    if (!selection.builtin[i]) continue;
    SPROF_TRY(auto result, run_one(defs[i], selection.params[i], input, timeline, options.compat_smdebug));
    results.push_back(std::move(result));
  }
  if (selection.report) results.insert(results.begin(), summarize_profiler_report(results));
  if (options.custom != nullptr && !options.custom->empty() && (selection.all_custom || !selection.custom.empty())) {
    CustomRuleRunner runner(*options.custom, selection.custom, false);
    auto custom = runner.evaluate(input, true);
    results.insert(results.end(), std::make_move_iterator(custom.begin()), std::make_move_iterator(custom.end()));
  }
  return results;
}

namespace {

Status write_text(const fs::path& path, const std::string& text) {
  fs::path temp = path;
  temp += ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return make_error(ErrorKind::io, "cannot write {}", temp.string());
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return make_error(ErrorKind::io, "cannot rename {} to {}: {}", temp.string(), path.string(), ec.message());
  return {};
}

}  // namespace

Result<fs::path> write_rule_output(const fs::path& out_dir, const std::vector<RuleResult>& results, int64_t epoch_s) {
  if (epoch_s < 0) {
    epoch_s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  fs::path output = out_dir / "rule-output" / fmt::format("ProfilerReport-{}", epoch_s) / "profiler-output";
  fs::path reports = output / "profiler-reports";
  std::error_code ec;
  fs::create_directories(reports, ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", reports.string(), ec.message());
  Json summary = Json::object();
  summary["rules"] = Json::array();
  for (const auto& result : results) {
    summary["rules"].push_back(Json{{"rule", result.rule},
                                    {"status", to_string(result.status)},
                                    {"RuleTriggered", result.triggered},
                                    {"Violations", result.violations},
                                    {"Datapoints", result.datapoints},
                                    {"RuleParameters", result.rule_parameters},
                                    {"evidence", result.evidence}});
    if (result.rule == "ProfilerReport") continue;  // SageMaker writes the sub-rules' reports only
    SPROF_TRY_STATUS(write_text(reports / (result.rule + ".json"), report_json(result)));
  }
  SPROF_TRY_STATUS(write_text(output / "rules-summary.json", summary.dump(2) + "\n"));
  return output;
}

}  // namespace sprof::rules
