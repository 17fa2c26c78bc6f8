#include "sprof/rules_render.hpp"

#include <fmt/format.h>

#include "sprof/text_table.hpp"

namespace sprof::render {

using Json = nlohmann::ordered_json;

const char* status_color(rules::RuleStatus status) {
  switch (status) {
    case rules::RuleStatus::issues_found: return "31";
    case rules::RuleStatus::no_issues_found: return "32";
    case rules::RuleStatus::no_data: return "2";
  }
  return "";
}

Json rule_result_json(const rules::RuleResult& r, bool with_details) {
  Json entry = Json::object();
  entry["rule"] = r.rule;
  entry["status"] = rules::to_string(r.status);
  entry["RuleTriggered"] = r.triggered;
  entry["Violations"] = r.violations;
  if (with_details) entry["Details"] = Json::parse(r.details_json, nullptr, false);
  entry["Datapoints"] = r.datapoints;
  entry["RuleParameters"] = r.rule_parameters;
  entry["evidence"] = r.evidence;
  entry["recommendation"] = r.recommendation;
  return entry;
}

std::string rules_table(const std::vector<rules::RuleResult>& results, const TextStyle& style) {
  TextTable table({"RULE", "STATUS", "TRIGGERED", "DATAPOINTS", "EVIDENCE", "RECOMMENDATION"});
  for (const auto& r : results) {
    table.add_row({{r.rule, ""},
                   {rules::to_string(r.status), status_color(r.status)},
                   {std::to_string(r.triggered), ""},
                   {std::to_string(r.datapoints), ""},
                   {r.evidence, ""},
                   {r.status == rules::RuleStatus::issues_found ? r.recommendation : "-", ""}});
  }
  return table.render(style.color, style.width);
}

std::string rules_json(const std::vector<rules::RuleResult>& results, const std::string& profile_dir,
                       const std::string& compat) {
  Json out = Json::object();
  out["profile"] = profile_dir;
  out["compat"] = compat.empty() ? Json(nullptr) : Json(compat);
  out["rules"] = Json::array();
  for (const auto& r : results) out["rules"].push_back(rule_result_json(r, true));
  return out.dump(2) + "\n";
}

std::string rules_csv(const std::vector<rules::RuleResult>& results) {
  std::string out = csv_line({"rule", "status", "triggered", "violations", "datapoints", "evidence",
                              "recommendation", "rule_parameters"});
  for (const auto& r : results) {
    out += csv_line({r.rule, rules::to_string(r.status), std::to_string(r.triggered), std::to_string(r.violations),
                     std::to_string(r.datapoints), r.evidence, r.recommendation, r.rule_parameters});
  }
  return out;
}

std::string rules_catalog(const std::vector<rules::RuleInfo>& custom) {
  std::string out;
  std::vector<rules::RuleInfo> all = rules::rule_catalog();
  all.insert(all.end(), custom.begin(), custom.end());
  for (const auto& info : all) {
    out += fmt::format("{}{}\n  {}\n", info.name, info.source.empty() ? "" : fmt::format("  (custom: {})", info.source),
                       info.description);
    for (const auto& p : info.params) {
      out += fmt::format("  {}_{}={}  {}\n", info.name, p.name, p.default_value, p.description);
    }
    if (!info.overridable && info.name != "ProfilerReport" && info.source.empty()) {
      out += "  (parameters cannot be overridden)\n";
    }
  }
  return out;
}

}  // namespace sprof::render
