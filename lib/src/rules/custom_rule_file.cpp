// Rule files (--rule-file) and --rule-program: parsed and checked before anything runs, so a typo
// is a usage error naming the file, the rule and the key.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rules/custom_rule_model.hpp"
#include "sprof/custom_rules.hpp"
#include "common/json_text.hpp"

namespace fs = std::filesystem;

namespace sprof::rules {
namespace {

using nlohmann::json;

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

struct Where {
  std::string file;
  std::string rule;
  template <typename... Args>
  Error error(fmt::format_string<Args...> format, Args&&... args) const {
    std::string what = fmt::format(format, std::forward<Args>(args)...);
    return Error{ErrorKind::usage, rule.empty() ? fmt::format("--rule-file {}: {}", file, what)
                                                : fmt::format("--rule-file {}: rule {}: {}", file, rule, what)};
  }
};

Result<std::string> text_field(const json& entry, const char* key, const Where& where, bool required) {
  auto it = entry.find(key);
  if (it == entry.end()) {
    if (required) return where.error("\"{}\" is missing", key);
    return std::string();
  }
  if (!it->is_string()) return where.error("\"{}\" must be a string", key);
  return it->get<std::string>();
}

Status check_keys(const json& entry, std::initializer_list<const char*> known, const Where& where) {
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      return where.error("unknown key \"{}\" (known: {})", it.key(), fmt::join(known, ", "));
    }
  }
  return {};
}

Status parse_window(const json& window, ThresholdRule& rule, const Where& where) {
  if (!window.is_object()) return where.error("\"window\" must be an object such as {{\"steps\": 5}}");
  SPROF_TRY_STATUS(check_keys(window, {"steps", "seconds", "mode"}, where));
  bool steps = window.contains("steps"), seconds = window.contains("seconds");
  if (steps == seconds) return where.error("\"window\" needs exactly one of \"steps\" and \"seconds\"");
  if (steps) {
    const json& n = window["steps"];
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > 100000000) {
      return where.error("window \"steps\" must be an integer from 1 to 100000000");
    }
    rule.window_steps = n.get<int64_t>();
  } else {
    const json& s = window["seconds"];
    if (!s.is_number() || !(s.get<double>() >= 0.001 && s.get<double>() <= 1e7)) {
      return where.error("window \"seconds\" must be a number from 0.001 to 10000000");
    }
    rule.window_seconds = s.get<double>();
  }
  if (window.contains("mode")) {
    if (!window["mode"].is_string()) return where.error("window \"mode\" must be a string");
    std::string mode = lowered(window["mode"].get<std::string>());
    if (mode != "train" && mode != "eval" && mode != "predict" && mode != "global") {
      return where.error("window mode \"{}\" is not train, eval, predict or global", window["mode"].get<std::string>());
    }
    rule.mode = mode;
  }
  return {};
}

Result<ThresholdRule> parse_threshold(const json& entry, const Where& where) {
  SPROF_TRY_STATUS(check_keys(entry, {"name", "description", "metric", "function", "time", "dimension", "device",
                                      "aggregation", "window", "comparison", "threshold", "message", "recommendation"},
                              where));
  ThresholdRule rule;
  rule.source = where.file;
  SPROF_TRY(rule.name, text_field(entry, "name", where, true));
  SPROF_TRY(rule.description, text_field(entry, "description", where, false));
  SPROF_TRY(rule.message, text_field(entry, "message", where, false));
  SPROF_TRY(rule.recommendation, text_field(entry, "recommendation", where, false));
  SPROF_TRY(std::string metric, text_field(entry, "metric", where, true));
  auto parsed_metric = parse_metric(metric);
  if (!parsed_metric) {
    return where.error("unknown metric \"{}\" (known: {})", metric, fmt::join(metric_names(), ", "));
  }
  rule.metric = *parsed_metric;
  SPROF_TRY(rule.function, text_field(entry, "function", where, rule.metric == CustomMetric::function));
  if (rule.metric != CustomMetric::function && !rule.function.empty()) {
    return where.error("\"function\" applies to metric function only");
  }
  SPROF_TRY(std::string time, text_field(entry, "time", where, false));
  if (!time.empty()) {
    if (rule.metric != CustomMetric::function) return where.error("\"time\" applies to metric function only");
    if (time != "self" && time != "total") return where.error("\"time\" must be \"self\" or \"total\", not \"{}\"", time);
    rule.self_time = time == "self";
  }
  SPROF_TRY(rule.dimension, text_field(entry, "dimension", where, rule.metric == CustomMetric::system));
  if (rule.metric != CustomMetric::system && !rule.dimension.empty()) {
    return where.error("\"dimension\" applies to metric system only");
  }
  SPROF_TRY(rule.device, text_field(entry, "device", where, false));
  if (!rule.device.empty() && !is_system_metric(rule.metric)) {
    return where.error("\"device\" applies to system metrics only, not {}", metric);
  }
  SPROF_TRY(std::string aggregation, text_field(entry, "aggregation", where, true));
  auto parsed_aggregation = parse_aggregation(aggregation);
  if (!parsed_aggregation) return where.error("unknown aggregation \"{}\" (known: mean, min, max, p50, p95, share)", aggregation);
  rule.aggregation = *parsed_aggregation;
  if (rule.aggregation == Aggregation::share && rule.metric != CustomMetric::function &&
      rule.metric != CustomMetric::step_time) {
    return where.error("aggregation share applies to metrics function and step_time only");
  }
  if (!entry.contains("window")) return where.error("\"window\" is missing");
  SPROF_TRY_STATUS(parse_window(entry["window"], rule, where));
  SPROF_TRY(std::string comparison, text_field(entry, "comparison", where, true));
  auto parsed_comparison = parse_comparison(comparison);
  if (!parsed_comparison) return where.error("unknown comparison \"{}\" (known: >, >=, <, <=)", comparison);
  rule.comparison = *parsed_comparison;
  if (!entry.contains("threshold")) return where.error("\"threshold\" is missing");
  if (!entry["threshold"].is_number() || !std::isfinite(entry["threshold"].get<double>())) {
    return where.error("\"threshold\" must be a number");
  }
  rule.threshold = entry["threshold"].get<double>();
  return rule;
}

Result<ProgramRule> parse_program(const json& entry, const Where& where, const fs::path& file) {
  SPROF_TRY_STATUS(check_keys(entry, {"name", "description", "program", "recommendation"}, where));
  ProgramRule rule;
  rule.source = where.file;
  SPROF_TRY(rule.name, text_field(entry, "name", where, true));
  SPROF_TRY(rule.description, text_field(entry, "description", where, false));
  SPROF_TRY(rule.recommendation, text_field(entry, "recommendation", where, false));
  const json& program = entry["program"];
  auto blank = [](const json& a) { return a.get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos; };
  if ((program.is_string() && blank(program)) ||
      (program.is_array() && !program.empty() && program[0].is_string() && blank(program[0]))) {
    return where.error("\"program\" is empty: give the command to run");
  }
  if (program.is_string()) {
    rule.argv = {program.get<std::string>()};
  } else if (program.is_array() && !program.empty() &&
             std::all_of(program.begin(), program.end(), [](const json& a) { return a.is_string(); })) {
    for (const auto& a : program) rule.argv.push_back(a.get<std::string>());
  } else {
    return where.error("\"program\" must be a command: a string, or a list of strings");
  }
  // Relative paths are the rule file's: the command when it holds a '/' (a bare name is looked
  // up in PATH), and an argument that names a file beside the rule file.
  fs::path base = file.parent_path();
  for (size_t i = 0; i < rule.argv.size(); ++i) {
    std::string& a = rule.argv[i];
    if (a.empty() || a[0] == '-' || fs::path(a).is_absolute()) continue;
    std::error_code ec;
    if ((i == 0 && a.find('/') != std::string::npos) || (i > 0 && fs::exists(base / a, ec))) {
      a = (base / a).lexically_normal().string();
    }
  }
  return rule;
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// `taken`: the lowered names of the built-in rules, "all" and every custom rule so far; a set, so
// that a file of 200,000 rules loads in linear time.
Status add_checked_name(const std::string& name, std::set<std::string>& taken, const Where& where) {
  if (!valid_name(name)) {
    return where.error("rule name \"{}\" may hold only letters, digits, '_', '-' and '.'", name);
  }
  std::string low = lowered(name);
  bool builtin = low == "all" || std::any_of(rule_catalog().begin(), rule_catalog().end(),
                                             [&](const RuleInfo& info) { return lowered(info.name) == low; });
  if (builtin) return where.error("\"{}\" is the name of a built-in rule", name);
  if (!taken.insert(low).second) return where.error("a rule named {} is already defined", name);
  return {};
}

// Finds a key given twice in one object, in one pass over the text (nlohmann's parser callback
// rescans each parent at every object's end: quadratic over a list of 200,000 rules).
class DuplicateKeys : public nlohmann::json_sax<json> {
 public:
  std::optional<std::string> duplicate;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!open_.empty() && !open_.back().insert(k).second && !duplicate) duplicate = k;
    return true;
  }
  bool end_object() override {
    if (!open_.empty()) open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  std::vector<std::set<std::string>> open_;
};

// JSON text as a document, refusing what nlohmann would take silently: a key given twice in one
// object (the last would win) and nesting that its recursive parser cannot take.
Result<json> parse_rule_json(const std::string& text, const Where& where) {
  if (!store::json_depth_within(text)) return where.error("JSON nested deeper than {} levels", store::kMaxJsonDepth);
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return where.error("not valid JSON");
  DuplicateKeys keys;
  json::sax_parse(text, &keys);
  if (keys.duplicate) {
    return where.error("the key \"{}\" is given twice in one object (JSON would keep only the last)", *keys.duplicate);
  }
  return doc;
}

}  // namespace

std::vector<RuleInfo> CustomRules::catalog() const {
  std::vector<RuleInfo> infos;
  for (const auto& t : thresholds) {
    RuleInfo info;
    info.name = t.name;
    info.description = t.description.empty() ? describe(t) : t.description;
    info.recommendation = t.recommendation;
    info.overridable = false;
    info.source = t.source;
    infos.push_back(std::move(info));
  }
  for (const auto& p : programs) {
    RuleInfo info;
    info.name = p.name;
    info.description = p.description.empty() ? fmt::format("rule program: {}", fmt::join(p.argv, " ")) : p.description;
    info.recommendation = p.recommendation;
    info.overridable = false;
    info.source = p.source;
    infos.push_back(std::move(info));
  }
  return infos;
}

std::optional<std::string> CustomRules::find(std::string_view name) const {
  std::string low = lowered(name);
  for (const auto& t : thresholds) {
    if (lowered(t.name) == low) return t.name;
  }
  for (const auto& p : programs) {
    if (lowered(p.name) == low) return p.name;
  }
  return std::nullopt;
}

Status add_rule_file(const fs::path& file, CustomRules& rules) {
  Where where{file.string(), ""};
  std::ifstream in(file, std::ios::binary);
  if (!in) return make_error(ErrorKind::usage, "--rule-file {}: cannot be read", file.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  SPROF_TRY(json doc, parse_rule_json(buffer.str(), where));
  if (doc.is_object() && doc.contains("rules") && doc.size() == 1) doc = doc["rules"];
  if (!doc.is_array()) return where.error("expected a list of rules, or {{\"rules\": [...]}}");
  if (doc.empty()) return where.error("it holds no rules");
  CustomRules added = rules;
  std::set<std::string> taken;
  for (const auto& t : added.thresholds) taken.insert(lowered(t.name));
  for (const auto& p : added.programs) taken.insert(lowered(p.name));
  for (size_t i = 0; i < doc.size(); ++i) {
    const json& entry = doc[i];
    where.rule = fmt::format("#{}", i + 1);
    if (!entry.is_object()) return where.error("each rule must be a JSON object");
    if (entry.contains("name") && entry["name"].is_string()) where.rule = entry["name"].get<std::string>();
    if (entry.contains("program")) {
      SPROF_TRY(ProgramRule rule, parse_program(entry, where, file));
      SPROF_TRY_STATUS(add_checked_name(rule.name, taken, where));
      added.programs.push_back(std::move(rule));
    } else {
      SPROF_TRY(ThresholdRule rule, parse_threshold(entry, where));
      SPROF_TRY_STATUS(add_checked_name(rule.name, taken, where));
      added.thresholds.push_back(std::move(rule));
    }
  }
  rules = std::move(added);
  return {};
}

Status add_rule_program(std::string_view flag, CustomRules& rules) {
  std::string name;
  std::string_view command = flag;
  size_t eq = flag.find('=');
  size_t space = flag.find(' ');
  if (eq != std::string_view::npos && (space == std::string_view::npos || eq < space)) {
    name = std::string(flag.substr(0, eq));
    command = flag.substr(eq + 1);
  }
  ProgramRule rule;
  rule.source = "--rule-program";
  std::istringstream words{std::string(command)};
  for (std::string word; words >> word;) rule.argv.push_back(word);
  if (rule.argv.empty()) return make_error(ErrorKind::usage, "--rule-program {}: no command", flag);
  if (name.empty()) name = fs::path(rule.argv[0]).stem().string();
  rule.name = name;
  if (!valid_name(name)) {
    return make_error(ErrorKind::usage, "--rule-program {}: rule name \"{}\" may hold only letters, digits, '_', '-' and '.'; "
                      "give one as NAME=COMMAND", flag, name);
  }
  std::string low = lowered(name);
  bool builtin = std::any_of(rule_catalog().begin(), rule_catalog().end(),
                             [&](const RuleInfo& info) { return lowered(info.name) == low; });
  if (builtin || low == "all" || rules.find(name)) {
    return make_error(ErrorKind::usage, "--rule-program {}: the name {} is taken; give another as NAME=COMMAND", flag, name);
  }
  rules.programs.push_back(std::move(rule));
  return {};
}

}  // namespace sprof::rules
