// sprof analyze DIR as text: one page about a training job (job, phases, steps, functions, system
// usage, rules).

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "sprof/analyze_render.hpp"
#include "sprof/markup.hpp"
#include "sprof/rules_render.hpp"
#include "sprof/text_table.hpp"

namespace sprof::render {
namespace {

std::string shorten(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  return "..." + text.substr(text.size() - (max - 3));
}

std::string utc(int64_t epoch_us) {
  std::time_t t = static_cast<std::time_t>(epoch_us / 1000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03d} UTC", buf, static_cast<int>((epoch_us % 1000000) / 1000));
}

std::string seconds_text(double s) { return fmt::format("{:.3f} s", s); }

std::string function_text(const report::FunctionTime& f) {
  return terminal_safe(fmt::format("{} ({}:{})", f.name, shorten(f.file, 50), f.first_line));
}

std::string value_text(double v, const std::string& unit) {
  if (unit == "B" || unit == "B/s") {
    static const char* prefixes[] = {"", "Ki", "Mi", "Gi", "Ti"};
    int i = 0;
    double x = v;
    while (std::fabs(x) >= 1024 && i < 4) {
      x /= 1024;
      ++i;
    }
    return fmt::format("{:.1f} {}{}", x, prefixes[i], unit);
  }
  if (unit.rfind("%", 0) == 0) return fmt::format("{:.1f}%", v);
  if (unit.empty() && v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}{}", v, unit.empty() ? "" : " " + unit);
}

void heading(std::string& out, bool color, const std::string& title) {
  out += color ? fmt::format("\n\x1b[1m{}\x1b[0m\n", title) : fmt::format("\n{}\n", title);
}

std::string indent(const std::string& block) {
  std::string out;
  size_t start = 0;
  while (start < block.size()) {
    size_t end = block.find('\n', start);
    if (end == std::string::npos) end = block.size();
    out += "  " + block.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

void render_job(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  const auto& job = r.job;
  heading(out, color, "JOB");
  TextTable facts({"", ""});
  if (!job.has_manifest) facts.add_row({{"source", ""}, {"smdebug-style directory (no sprof.json)", ""}});
  if (!job.command.empty()) facts.add_row({{"command", ""}, {fmt::format("{}", fmt::join(job.command, " ")), ""}});
  if (!job.state.empty()) {
    std::string state = job.state;
    if (job.exit_status) state += fmt::format(", exit status {}", *job.exit_status);
    if (job.mode == "attach") {
      state += job.state == "running" ? fmt::format(": sprof attached to pid {} and detached; the process ran on", job.target_pid)
                                      : fmt::format(" (sprof attached to pid {})", job.target_pid);
    }
    facts.add_row({{"state", ""}, {state, ""}});
  }
  if (job.end_us > job.start_us) {
    facts.add_row({{"duration", ""},
                   {fmt::format("{} ({} to {})", seconds_text(job.duration_s()), utc(job.start_us), utc(job.end_us)),
                    ""}});
  } else {
    facts.add_row({{"duration", ""}, {"unknown (no timestamps)", ""}});
  }
  facts.add_row({{"python", ""},
                 {job.python_versions.empty() ? "unknown" : fmt::format("{}", fmt::join(job.python_versions, ", ")),
                  ""}});
  // One row per machine, its processes under it (smdebug's node ids: one per process, and the
  // machine's system metrics under algo-<n>).
  for (size_t i = 0; i < job.machines.size(); ++i) {
    const report::JobMachine& m = job.machines[i];
    std::vector<std::string> parts;
    if (!m.processes.empty()) {
      constexpr size_t kShown = 6;
      std::vector<std::string> shown(m.processes.begin(), m.processes.begin() + std::min(kShown, m.processes.size()));
      std::string more = m.processes.size() > kShown ? fmt::format(", and {} more", m.processes.size() - kShown) : "";
      parts.push_back(fmt::format("{} process{} ({}{})", m.processes.size(), m.processes.size() == 1 ? "" : "es",
                                  fmt::join(shown, ", "), more));
    }
    if (!m.system_node.empty()) {
      parts.push_back(m.system_node == m.host ? "system metrics" : fmt::format("system metrics as {}", m.system_node));
    }
    facts.add_row({{i == 0 ? (job.machines.size() == 1 ? "machine" : "machines") : "", ""},
                   {fmt::format("{}: {}", m.host, fmt::join(parts, ", ")), ""}});
  }
  facts.add_row({{"processes", ""},
                 {job.has_manifest        ? std::to_string(job.processes.size())
                  : job.node_profiles > 0 ? fmt::format("{} in {} nodes' sprof.json (nodes/<host>/)", job.node_processes,
                                                        job.node_profiles)
                                          : "unknown (no sprof.json)",
                  ""}});
  // sprof's own costs, each under its own name: shares of a core while sampling, CPU seconds after.
  std::vector<std::string> during, after;
  for (const auto& c : r.own_costs) {
    if (c.after_sampling) {
      after.push_back(fmt::format("{} {} CPU in {}", c.name, seconds_text(c.cpu_s), seconds_text(c.wall_s)));
    } else {
      during.push_back(fmt::format("{} {:.2f}%", c.name, 100.0 * c.core_share()));
    }
  }
  if (!during.empty()) {
    facts.add_row({{"sprof's cost", ""}, {fmt::format("{} of a core while sampling", fmt::join(during, ", ")), ""}});
  }
  if (!after.empty()) facts.add_row({{"", ""}, {fmt::format("after the job: {}", fmt::join(after, ", ")), ""}});
  std::string table = facts.render(false, width);
  out += indent(table.substr(table.find('\n') + 1));  // no header row
  if (!job.processes.empty()) {
    // A ROLE column once there are several (workers, children).
    const bool roles = job.processes.size() > 1;
    std::vector<std::string> header{"PID", "PPID", "PYTHON", "SAMPLES", "COMMAND"};
    if (roles) header.insert(header.begin() + 2, "ROLE");
    TextTable procs(header);
    for (const auto& p : job.processes) {
      std::string cmd = fmt::format("{}", fmt::join(p.cmdline, " "));
      if (!p.error.empty()) cmd += "  [" + p.error + "]";
      std::vector<TableCell> row{{std::to_string(p.pid), ""},
                                 {std::to_string(p.ppid), ""},
                                 {p.python_version.empty() ? "-" : p.python_version, ""},
                                 {std::to_string(p.samples), ""},
                                 {cmd, ""}};
      if (roles) row.insert(row.begin() + 2, TableCell{p.role.empty() ? "-" : p.role, ""});
      procs.add_row(std::move(row));
    }
    out += "\n" + indent(procs.render(color, width > 2 ? width - 2 : 0));
  }
}

void render_phases(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  heading(out, color, "JOB PHASES");
  if (r.phases.empty()) {
    out += "  (" + r.phases_note + ")\n";
    return;
  }
  TextTable t({"PHASE", "START", "DURATION", "SHARE", fmt::format("TOP FUNCTIONS (self, {})", r.time_view.describe())});
  for (const auto& p : r.phases) {
    std::string top;
    for (const auto& f : p.top) {
      if (!top.empty()) top += ", ";
      top += fmt::format("{} {:.2f}s", terminal_safe(f.name), f.self_s);
    }
    if (top.empty()) top = r.has_samples ? "-" : "(no samples)";
    t.add_row({{p.name, ""},
               {fmt::format("+{:.3f} s", static_cast<double>(p.start_us - r.job.start_us) / 1e6), ""},
               {seconds_text(p.seconds()), ""},
               {fmt::format("{:.1f}%", 100.0 * p.share), ""},
               {top, ""}});
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));
}

// Step times per rank and node: the straggler a data-parallel job waits for.
void render_skew(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  if (!r.step_skew) return;
  const auto& k = *r.step_skew;
  heading(out, color, fmt::format("{} STEP TIMES BY RANK (median; the slowest sets the pace)", k.mode));
  TextTable t({"RANK", "MACHINE", "PROCESS", "STEPS", "MEAN", "P50", "P95", "VS FASTEST"});
  for (const auto& rank : k.ranks) {
    bool slowest = rank.node_id == k.straggler;
    t.add_row({{rank.rank.empty() ? "-" : rank.rank, ""},
               {rank.host, ""},
               {rank.node_id, ""},
               {std::to_string(rank.steps), ""},
               {seconds_text(rank.mean_s), ""},
               {seconds_text(rank.median_s), ""},
               {seconds_text(rank.p95_s), ""},
               {fmt::format("{:+.1f}%", 100.0 * rank.vs_fastest), slowest && k.skew > 0.05 ? "33" : ""}});
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));
  if (k.nodes.size() > 1) {
    TextTable n({"MACHINE", "RANKS", "STEPS", "P50", "VS FASTEST"});
    for (const auto& node : k.nodes) {
      n.add_row({{node.host, ""},
                 {std::to_string(node.ranks), ""},
                 {std::to_string(node.steps), ""},
                 {seconds_text(node.median_s), ""},
                 {fmt::format("{:+.1f}%", 100.0 * node.vs_fastest), node.host == k.straggler_node ? "33" : ""}});
    }
    out += "\n" + indent(n.render(color, width > 2 ? width - 2 : 0));
  }
  auto straggler = std::find_if(k.ranks.begin(), k.ranks.end(), [&](const auto& x) { return x.node_id == k.straggler; });
  out += fmt::format("  straggler: {}{} on {}, its median step {:.1f}% slower than the fastest rank's{}\n",
                     straggler->rank.empty() ? "process " : "rank ", straggler->rank.empty() ? k.straggler : straggler->rank,
                     straggler->host, 100.0 * k.skew,
                     k.straggler_node.empty() ? "" : fmt::format("; slowest machine: {}", k.straggler_node));
}

// Iteration = input wait (previous step's end to this step's start) + step, per mode.
void render_iterations(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  if (r.iterations.empty()) return;
  heading(out, color, "ITERATIONS (input wait: from the previous step's end to the step's start)");
  TextTable t({"MODE", "ITERATIONS", "ITERATION P50", "P95", "STEP P50", "P95", "INPUT WAIT P50", "P95", "WAITING",
               "IN DATALOADER"});
  for (const auto& it : r.iterations) {
    t.add_row({{it.mode, ""},
               {std::to_string(it.iterations), ""},
               {seconds_text(it.iteration.p50), ""},
               {seconds_text(it.iteration.p95), ""},
               {seconds_text(it.step.p50), ""},
               {seconds_text(it.step.p95), ""},
               {seconds_text(it.wait.p50), ""},
               {seconds_text(it.wait.p95), ""},
               {fmt::format("{:.1f}%", 100.0 * it.wait_share()), it.wait_share() >= rules::kHighlyInputBoundShare ? "33" : ""},
               {it.dataloader_s > 0 ? fmt::format("{:.1f}%", 100.0 * it.dataloader_share()) : "-", ""}});
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));
  if (r.wait_top.empty() || r.wait_sampled_s <= 0) return;
  out += fmt::format("  while the {} loop waited for input, its step threads were in (wall time, {:.3f} s sampled):\n",
                     r.iterations.front().mode, r.wait_sampled_s);
  for (const auto& f : r.wait_top) {
    out += fmt::format("      {:>5.1f}%  {:>8.3f} s  {}\n", 100.0 * f.self_s / r.wait_sampled_s, f.self_s, function_text(f));
  }
}

void render_steps(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  heading(out, color, fmt::format("STEP TIMES (outliers: duration > mean + {}·std, as StepOutlier)", r.outlier_stddev));
  if (!r.partial_steps.empty()) {
    std::vector<std::string> cut;
    for (const auto& s : r.partial_steps) cut.push_back(fmt::format("{} step {} ({})", s.mode, s.step, seconds_text(s.seconds())));
    out += fmt::format("  {} partial step{} left out, cut by the attach window: {}\n", r.partial_steps.size(),
                       r.partial_steps.size() == 1 ? "" : "s", fmt::join(cut, ", "));
  }
  if (r.step_stats.empty()) {
    out += "  (" + (r.steps_note.empty() ? std::string("no whole step in the attach window") : r.steps_note) + ")\n";
    return;
  }
  TextTable t({"PROCESS", "MODE", "COUNT", "MEAN", "P50", "P95", "MAX", "OUTLIERS"});
  for (const auto& s : r.step_stats) {
    std::string outliers = std::to_string(s.outlier_steps.size());
    if (!s.outlier_steps.empty()) {
      std::vector<std::string> shown(s.outlier_steps.begin(),
                                     s.outlier_steps.begin() + std::min<size_t>(8, s.outlier_steps.size()));
      outliers += fmt::format(" (step {}{})", fmt::join(shown, ", "), s.outlier_steps.size() > 8 ? ", ..." : "");
    }
    t.add_row({{s.node, ""},
               {s.mode, ""},
               {std::to_string(s.count), ""},
               {seconds_text(s.mean), ""},
               {seconds_text(s.p50), ""},
               {seconds_text(s.p95), ""},
               {seconds_text(s.max), ""},
               {outliers, s.outlier_steps.empty() ? "" : "33"}});
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));

  render_iterations(out, r, color, width);
  render_skew(out, r, color, width);

  heading(out, color,
          r.has_samples ? fmt::format("SLOWEST STEPS ({})", r.time_view.describe()) : std::string("SLOWEST STEPS"));
  for (const auto& s : r.slowest_steps) {
    out += fmt::format("  {} step {} ({}, pid {}): {} at +{:.3f} s{}\n", s.mode, s.step.empty() ? "?" : s.step, s.node,
                       s.pid, seconds_text(s.seconds()), static_cast<double>(s.start_us - r.job.start_us) / 1e6,
                       s.outlier ? "  [outlier]" : "");
    if (!r.has_samples) continue;
    if (s.top.empty()) {
      out += "      (no samples of this process in the step)\n";
      continue;
    }
    for (const auto& f : s.top) {
      out += fmt::format("      {:>5.1f}%  {:>8.3f} s  {}\n", s.sampled_s > 0 ? 100.0 * f.self_s / s.sampled_s : 0.0,
                         f.self_s, function_text(f));
    }
  }
  if (!r.has_samples) out += "  (no samples: functions per step unknown)\n";
}

void render_functions(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  const bool wall = !r.time_view.on_cpu;
  heading(out, color, fmt::format("TOP FUNCTIONS (self time: {}{})", r.time_view.describe(),
                                  wall ? "; WAITING: of it off-CPU" : ""));
  if (!r.has_samples || r.samples.top.empty()) {
    out += "  (" + (r.samples_note.empty() ? std::string("no samples") : r.samples_note) + ")\n";
    return;
  }
  out += fmt::format("  {} samples ({} kept, {:.2f} s) from {} process{}, {} thread{}\n", r.samples.samples,
                     r.samples.kept_samples, r.samples.kept_s, r.samples.processes, r.samples.processes == 1 ? "" : "es",
                     r.samples.threads, r.samples.threads == 1 ? "" : "s");
  std::vector<std::string> header{"SELF%", "TOTAL%", "SELF", "FUNCTION (file:line)"};
  if (wall) header.insert(header.begin() + 3, "WAITING");
  TextTable t(header);
  for (const auto& f : r.samples.top) {
    std::vector<TableCell> row{{fmt::format("{:.1f}%", 100.0 * f.self_s / r.samples.kept_s), ""},
                               {fmt::format("{:.1f}%", 100.0 * f.total_s / r.samples.kept_s), ""},
                               {seconds_text(f.self_s), ""},
                               {function_text(f), ""}};
    if (wall) row.insert(row.begin() + 3, {f.self_s > 0 ? fmt::format("{:.0f}%", 100.0 * f.waiting_s / f.self_s) : "-", ""});
    t.add_row(row);
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));
}

void render_system(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  std::string title = "SYSTEM USAGE";
  if (r.system_interval_ms) {
    title += fmt::format(" (every {} ms", *r.system_interval_ms);
    if (r.sysmon_cpu_share) title += fmt::format("; the monitor used {:.2f}% of a core", 100.0 * *r.sysmon_cpu_share);
    title += ")";
  }
  heading(out, color, title);
  if (r.system.empty()) {
    out += "  (" + r.system_note + ")\n";
    return;
  }
  for (const auto& c : r.system_coverage) {
    double from = c.first_s - static_cast<double>(r.job.start_us) / 1e6;
    double to = c.last_s - static_cast<double>(r.job.start_us) / 1e6;
    std::string name = c.machine.empty() || c.machine == c.node ? c.node : fmt::format("{} ({})", c.machine, c.node);
    out += fmt::format("  {}: {} ticks from +{:.1f} s to +{:.1f} s, every {:.3f} s\n", name, c.ticks, from, to,
                       c.interval_s);
  }
  TextTable t({"MACHINE", "METRIC", "MEAN", "P50", "P95", "MAX", "MIN"});
  for (const auto& m : r.system) {
    t.add_row({{m.machine.empty() ? m.node : m.machine, ""},
               {m.metric, ""},
               {value_text(m.mean, m.unit), ""},
               {value_text(m.p50, m.unit), ""},
               {value_text(m.p95, m.unit), ""},
               {value_text(m.max, m.unit), ""},
               {value_text(m.min, m.unit), ""}});
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));
}

std::string share_text(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

void render_gpu(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  const report::GpuSummary& g = r.gpu;
  heading(out, color, "GPU (sprof gpu DIR VIEW for more)");
  if (!g.present) {
    out += "  (" + g.note + ")\n";
    return;
  }
  out += fmt::format("  {} kernels ({}), {} copies and memsets ({})\n", g.kernels, seconds_text(g.kernel_s), g.copies,
                     seconds_text(g.copy_s));
  TextTable d({"DEVICE", "SPAN", "COMPUTE", "NON-COMPUTE", "IDLE"});
  for (const auto& u : g.devices) {
    d.add_row({{u.name.empty() ? std::to_string(u.device) : fmt::format("{} {}", u.device, u.name), ""},
               {seconds_text(u.span_s), ""},
               {share_text(u.compute_share), ""},
               {share_text(u.non_compute_share), ""},
               {share_text(u.idle_share), u.idle_share >= 0.5 ? "31" : ""}});
  }
  out += indent(d.render(color, width > 2 ? width - 2 : 0));
  TextTable k({"TIME %", "TOTAL", "INSTANCES", "AVG", "KERNEL"});
  for (const auto& row : g.top_kernels) {
    k.add_row({{share_text(row.share), ""},
               {seconds_text(row.total_s), ""},
               {std::to_string(row.instances), ""},
               {fmt::format("{:.1f} µs", row.avg_us), ""},
               {shorten(row.name, 80), ""}});
  }
  out += indent(k.render(color, width > 2 ? width - 2 : 0));
  if (g.call_sites.empty()) {
    out += "  call sites: " + g.call_sites_note + "\n";
    return;
  }
  TextTable c({"GPU %", "GPU TIME", "KERNELS", "CALL SITE", "TOP KERNEL"});
  for (const auto& row : g.call_sites) {
    c.add_row({{share_text(row.share), ""},
               {seconds_text(row.gpu_s), ""},
               {std::to_string(row.kernels), ""},
               {shorten(row.site, 60), ""},
               {shorten(row.top_kernel, 40), ""}});
  }
  out += indent(c.render(color, width > 2 ? width - 2 : 0));
}

void render_rules(std::string& out, const report::AnalyzeReport& r, bool color, size_t width) {
  heading(out, color, "RULES (sprof rules DIR for details)");
  TextTable t({"RULE", "STATUS", "TRIGGERED", "DATAPOINTS", "EVIDENCE"});
  for (const auto& rr : r.rules) {
    t.add_row({{rr.rule, ""},
               {rules::to_string(rr.status), status_color(rr.status)},
               {std::to_string(rr.triggered), ""},
               {std::to_string(rr.datapoints), ""},
               {rr.evidence, ""}});
  }
  out += indent(t.render(color, width > 2 ? width - 2 : 0));
  for (const auto& rr : r.rules) {
    if (rr.status != rules::RuleStatus::issues_found || rr.rule == "ProfilerReport") continue;
    out += fmt::format("  {}: {}\n", rr.rule, rr.recommendation);
  }
}

}  // namespace

std::string analyze_text(const report::AnalyzeReport& r, const TextStyle& style) {
  const bool color = style.color;
  const size_t width = style.width;
  std::string out = fmt::format("sprof analyze {}\n", r.dir.string());
  // No steps: said first, with the way to get them (the note's first part); else how much of the
  // training loop waited for input.
  if (r.step_stats.empty() && !r.steps_note.empty()) out += r.steps_note.substr(0, r.steps_note.find("; ")) + "\n";
  if (!r.loop_headline.empty()) out += terminal_safe(r.loop_headline) + "\n";
  render_job(out, r, color, width);
  render_phases(out, r, color, width);
  render_steps(out, r, color, width);
  render_functions(out, r, color, width);
  render_system(out, r, color, width);
  render_gpu(out, r, color, width);
  render_rules(out, r, color, width);
  return out;
}

}  // namespace sprof::render
