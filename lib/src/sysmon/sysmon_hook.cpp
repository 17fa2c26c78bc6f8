#include "sprof/sysmon_hook.hpp"

#include <spdlog/spdlog.h>

#include "sprof/manifest_sections.hpp"

namespace sprof::sysmon {

void SystemMonitorHook::on_start(const launch::RecordContext& context) {
  options_.profile_dir = context.output_dir;
  options_.root_pid = context.target_pid;
  auto monitor = SystemMonitor::create(options_);
  if (!monitor.ok()) {
    spdlog::warn("system metrics off: {}", monitor.error().message);
    return;
  }
  if (auto status = (*monitor)->start(); !status.ok()) {
    spdlog::warn("system metrics off: {}", status.error().message);
    return;
  }
  monitor_ = std::move(monitor).value();
}

Status SystemMonitorHook::on_finish(const std::filesystem::path& /*output_dir*/, store::Manifest& manifest) {
  if (!monitor_) return {};
  Status stopped = monitor_->stop();
  MonitorStats stats = monitor_->stats();
  spdlog::debug("system monitor: {} ticks, {} GPU(s), sampling thread {:.3f} s CPU over {:.1f} s", stats.ticks,
                stats.gpus, static_cast<double>(stats.thread_cpu_ns) / 1e9, static_cast<double>(stats.wall_ns) / 1e9);
  if (!stopped.ok()) spdlog::warn("system metrics incomplete: {}", stopped.error().message);
  // What analyze reports about the metrics and what they cost.
  store::SystemMetricsSection section;
  section.node_id = options_.node_id;
  section.interval_ms = options_.interval_ms;
  section.ticks = static_cast<int64_t>(stats.ticks);
  section.gpus = static_cast<int64_t>(stats.gpus);
  section.thread_cpu_s = static_cast<double>(stats.thread_cpu_ns) / 1e9;
  section.wall_s = static_cast<double>(stats.wall_ns) / 1e9;
  if (!stopped.ok()) section.error = stopped.error().message;
  store::set_section(manifest, section);
  return {};  // missing metrics never fail a recording
}

}  // namespace sprof::sysmon
