// sprof sysmon (hidden): runs the system monitor alone for a while and reports its own cost. Used by
// scripts/bench-sysmon and the integration tests; `record --system-interval-ms` runs the same monitor.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "option_checks.hpp"
#include "exit_codes.hpp"
#include "sprof/sysmon.hpp"

namespace sprof::cli {
namespace {

struct SysmonOptions {
  sysmon::MonitorOptions monitor;
  double duration_s = 10;
  bool no_gpu = false;
};

Result<int> run_sysmon(SysmonOptions options) {
  options.monitor.gpu = !options.no_gpu;
  SPROF_TRY(sysmon::MonitorCost cost, sysmon::measure_monitor(options.monitor, options.duration_s));
  double wall = static_cast<double>(cost.stats.wall_ns) / 1e9;
  double thread_cpu = static_cast<double>(cost.stats.thread_cpu_ns) / 1e9;
  nlohmann::ordered_json out = {{"interval_ms", options.monitor.interval_ms},
                                {"ticks", cost.stats.ticks},
                                {"gpus", cost.stats.gpus},
                                {"wall_seconds", wall},
                                {"thread_cpu_seconds", thread_cpu},
                                {"process_cpu_seconds", cost.process_cpu_s},
                                {"cpu_percent_of_one_core", wall > 0 ? 100.0 * thread_cpu / wall : 0.0}};
  fmt::print("{}\n", out.dump());
  return kExitSuccess;
}

}  // namespace

void add_sysmon(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<SysmonOptions>();
  CLI::App* sub = app.add_subcommand("sysmon", "Run the system monitor alone and print its cost (for benchmarks)");
  sub->group("");  // hidden from --help: a developer tool
  sub->add_option("-o,--output", options->monitor.profile_dir, "Profile directory to write system/ into")->required();
  sub->add_option("--system-interval-ms", options->monitor.interval_ms, "Sampling interval: 100, 200, 500, 1000, 5000, 60000")
      ->capture_default_str();
  sub->add_option("--duration", options->duration_s, "Seconds to run")
      ->capture_default_str()
      ->check(finite_positive(kMaxDurationS));
  sub->add_option("--pid", options->monitor.root_pid, "Root of the process tree to measure");
  sub->add_option("--node-id", options->monitor.node_id, "Node id (algo-<n>)")->capture_default_str();
  sub->add_flag("--no-gpu", options->no_gpu, "Do not load NVML");
  commands.push_back(Command{sub, [options] { return run_sysmon(*options); }});
}

}  // namespace sprof::cli
