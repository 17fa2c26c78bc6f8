// analyze --format json: the report as one JSON object; sections without data carry a "note".

#include <nlohmann/json.hpp>

#include "sprof/analyze_render.hpp"
#include "sprof/rules_render.hpp"

namespace sprof::render {

using namespace report;
namespace {

using Json = nlohmann::ordered_json;

Json top_functions_json(const std::vector<FunctionTime>& top) {
  Json out = Json::array();
  for (const auto& f : top) {
    out.push_back({{"function", f.name},
                   {"file", f.file},
                   {"line", f.first_line},
                   {"self_s", f.self_s},
                   {"waiting_s", f.waiting_s},
                   {"total_s", f.total_s},
                   {"self_samples", f.self_samples}});
  }
  return out;
}

Json note_or_null(const std::string& note) { return note.empty() ? Json(nullptr) : Json(note); }

Json job_json(const JobSummary& job) {
  Json j;
  j["source"] = job.has_manifest ? "sprof" : "smdebug";
  j["command"] = job.command;
  j["state"] = job.state.empty() ? Json(nullptr) : Json(job.state);
  j["mode"] = job.mode.empty() ? Json(nullptr) : Json(job.mode);
  j["target_pid"] = job.mode == "attach" ? Json(job.target_pid) : Json(nullptr);
  j["exit_status"] = job.exit_status ? Json(*job.exit_status) : Json(nullptr);
  j["start_us"] = job.start_us;
  j["end_us"] = job.end_us;
  j["duration_s"] = job.duration_s();
  j["python_versions"] = job.python_versions;
  j["nodes"] = job.nodes;
  Json machines = Json::array();
  for (const auto& m : job.machines) {
    machines.push_back({{"host", m.host},
                        {"processes", m.processes},
                        {"system_node", m.system_node.empty() ? Json(nullptr) : Json(m.system_node)}});
  }
  j["machines"] = std::move(machines);
  Json processes = Json::array();
  for (const auto& p : job.processes) {
    processes.push_back({{"pid", p.pid},
                         {"ppid", p.ppid},
                         {"python_version", p.python_version},
                         {"cmdline", p.cmdline},
                         {"samples", p.samples},
                         {"error", p.error.empty() ? Json(nullptr) : Json(p.error)},
                         {"role", p.role.empty() ? Json(nullptr) : Json(p.role)}});
  }
  j["processes"] = std::move(processes);
  j["node_profiles"] = job.node_profiles;
  j["node_processes"] = job.node_processes;
  return j;
}

Json step_json(const StepRecord& s, bool with_functions) {
  Json j = {{"node", s.node},      {"mode", s.mode},         {"step", s.step},
            {"pid", s.pid},        {"start_us", s.start_us}, {"end_us", s.end_us},
            {"seconds", s.seconds()}, {"outlier", s.outlier}};
  j["input_wait_s"] = s.wait_s ? Json(*s.wait_s) : Json(nullptr);
  j["dataloader_s"] = s.dataloader_s;
  if (with_functions) {
    j["sampled_s"] = s.sampled_s;
    j["top_functions"] = top_functions_json(s.top);
  }
  return j;
}

}  // namespace

std::string analyze_json(const AnalyzeReport& r) {
  Json out;
  out["schema_version"] = 1;
  out["command"] = "analyze";
  out["profile"] = r.dir.string();
  out["job"] = job_json(r.job);

  Json phases = Json::array();
  for (const auto& p : r.phases) {
    phases.push_back({{"phase", p.name},
                      {"start_us", p.start_us},
                      {"end_us", p.end_us},
                      {"seconds", p.seconds()},
                      {"share", p.share},
                      {"top_functions", top_functions_json(p.top)}});
  }
  out["phases"] = {{"phases", std::move(phases)}, {"note", note_or_null(r.phases_note)}};

  Json modes = Json::array();
  for (const auto& s : r.step_stats) {
    modes.push_back({{"node", s.node},
                     {"mode", s.mode},
                     {"count", s.count},
                     {"mean_s", s.mean},
                     {"p50_s", s.p50},
                     {"p95_s", s.p95},
                     {"max_s", s.max},
                     {"min_s", s.min},
                     {"outlier_threshold_s", s.outlier_threshold},
                     {"outliers", s.outlier_steps.size()},
                     {"outlier_steps", s.outlier_steps}});
  }
  Json slowest = Json::array();
  for (const auto& s : r.slowest_steps) slowest.push_back(step_json(s, r.has_samples));
  Json partial = Json::array();
  for (const auto& s : r.partial_steps) partial.push_back(step_json(s, false));
  out["steps"] = {{"outlier_stddev", r.outlier_stddev},
                  {"modes", std::move(modes)},
                  {"slowest", std::move(slowest)},
                  {"partial", std::move(partial)},
                  {"note", note_or_null(r.steps_note)}};
  Json iteration_modes = Json::array();
  auto spread_json = [](const rules::Spread& x) {
    return Json{{"mean_s", x.mean}, {"p50_s", x.p50}, {"p95_s", x.p95}, {"max_s", x.max}};
  };
  for (const auto& it : r.iterations) {
    iteration_modes.push_back({{"mode", it.mode},
                               {"iterations", it.iterations},
                               {"processes", it.processes},
                               {"iteration", spread_json(it.iteration)},
                               {"step", spread_json(it.step)},
                               {"input_wait", spread_json(it.wait)},
                               {"iteration_s", it.iteration_s},
                               {"step_s", it.step_s},
                               {"input_wait_s", it.wait_s},
                               {"dataloader_s", it.dataloader_s},
                               {"input_wait_share", it.wait_share()},
                               {"dataloader_share", it.dataloader_share()},
                               {"step_share", it.step_share()},
                               {"verdict", rules::input_bound_class(it.wait_share())}});
  }
  out["iterations"] = {{"headline", r.loop_headline.empty() ? Json(nullptr) : Json(r.loop_headline)},
                       {"modes", std::move(iteration_modes)},
                       {"wait_sampled_s", r.wait_sampled_s},
                       {"wait_functions", top_functions_json(r.wait_top)}};
  if (r.step_skew) {
    const auto& k = *r.step_skew;
    Json ranks = Json::array();
    for (const auto& x : k.ranks) {
      ranks.push_back({{"rank", x.rank.empty() ? Json(nullptr) : Json(x.rank)},
                       {"host", x.host},
                       {"node_id", x.node_id},
                       {"steps", x.steps},
                       {"mean_s", x.mean_s},
                       {"median_s", x.median_s},
                       {"p95_s", x.p95_s},
                       {"vs_fastest", x.vs_fastest}});
    }
    Json nodes = Json::array();
    for (const auto& n : k.nodes) {
      nodes.push_back({{"host", n.host}, {"ranks", n.ranks}, {"steps", n.steps}, {"median_s", n.median_s},
                       {"vs_fastest", n.vs_fastest}});
    }
    out["steps"]["skew"] = {{"mode", k.mode},
                            {"ranks", std::move(ranks)},
                            {"nodes", std::move(nodes)},
                            {"straggler", k.straggler},
                            {"straggler_node", k.straggler_node.empty() ? Json(nullptr) : Json(k.straggler_node)},
                            {"skew", k.skew}};
  } else {
    out["steps"]["skew"] = nullptr;
  }

  Json functions;
  // What every function table of the page reads (the run's, the phases', the slowest steps').
  functions["time_view"] = {{"description", r.time_view.describe()},
                            {"on_cpu", r.time_view.on_cpu},
                            {"all_threads", r.time_view.all_threads}};
  if (r.has_samples) {
    functions["samples"] = r.samples.samples;
    functions["kept_samples"] = r.samples.kept_samples;
    functions["kept_s"] = r.samples.kept_s;
    functions["idle_samples"] = r.samples.idle_samples;
    functions["processes"] = r.samples.processes;
    functions["threads"] = r.samples.threads;
  }
  functions["top"] = top_functions_json(r.samples.top);
  functions["note"] = note_or_null(r.samples_note);
  out["functions"] = std::move(functions);

  Json system;
  system["interval_ms"] = r.system_interval_ms ? Json(*r.system_interval_ms) : Json(nullptr);
  system["monitor_cpu_share"] = r.sysmon_cpu_share ? Json(*r.sysmon_cpu_share) : Json(nullptr);
  Json coverage = Json::array();
  for (const auto& c : r.system_coverage) {
    coverage.push_back({{"node", c.node},
                        {"machine", c.machine},
                        {"first_s", c.first_s},
                        {"last_s", c.last_s},
                        {"ticks", c.ticks},
                        {"interval_s", c.interval_s}});
  }
  system["coverage"] = std::move(coverage);
  Json metrics = Json::array();
  for (const auto& m : r.system) {
    metrics.push_back({{"node", m.node},
                       {"machine", m.machine},
                       {"metric", m.metric},
                       {"unit", m.unit},
                       {"ticks", m.ticks},
                       {"mean", m.mean},
                       {"p50", m.p50},
                       {"p95", m.p95},
                       {"max", m.max},
                       {"min", m.min}});
  }
  system["metrics"] = std::move(metrics);
  system["note"] = note_or_null(r.system_note);
  out["system"] = std::move(system);
  Json costs = Json::array();
  for (const auto& c : r.own_costs) {
    costs.push_back({{"name", c.name}, {"cpu_s", c.cpu_s}, {"wall_s", c.wall_s}, {"core_share", c.core_share()},
                     {"after_sampling", c.after_sampling}});
  }
  out["own_costs"] = std::move(costs);

  const GpuSummary& g = r.gpu;
  Json gpu;
  gpu["present"] = g.present;
  gpu["kernels"] = g.kernels;
  gpu["copies"] = g.copies;
  gpu["kernel_s"] = g.kernel_s;
  gpu["copy_s"] = g.copy_s;
  Json devices = Json::array();
  for (const auto& u : g.devices) {
    devices.push_back({{"device", u.device}, {"name", u.name}, {"span_s", u.span_s}, {"compute_share", u.compute_share},
                       {"non_compute_share", u.non_compute_share}, {"idle_share", u.idle_share}});
  }
  gpu["devices"] = std::move(devices);
  Json kernels = Json::array();
  for (const auto& k : g.top_kernels) {
    kernels.push_back({{"name", k.name}, {"instances", k.instances}, {"total_s", k.total_s}, {"avg_us", k.avg_us},
                       {"share", k.share}});
  }
  gpu["top_kernels"] = std::move(kernels);
  Json sites = Json::array();
  for (const auto& c : g.call_sites) {
    sites.push_back({{"site", c.site}, {"attributed", c.attributed}, {"gpu_s", c.gpu_s}, {"share", c.share},
                     {"kernels", c.kernels}, {"top_kernel", c.top_kernel}});
  }
  gpu["call_sites"] = std::move(sites);
  gpu["call_sites_note"] = note_or_null(g.call_sites_note);
  gpu["note"] = note_or_null(g.note);
  out["gpu"] = std::move(gpu);

  Json rule_list = Json::array();
  for (const auto& rr : r.rules) rule_list.push_back(rule_result_json(rr, false));
  out["rules"] = std::move(rule_list);
  out["warnings"] = r.warnings;
  return out.dump(2) + "\n";
}

}  // namespace sprof::render
