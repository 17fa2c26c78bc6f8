#pragma once
// The system monitor as a record hook: started when the target runs (measuring its process tree),
// stopped when sampling ends. `sprof record --system-interval-ms MS` adds one of these to the hooks
// it passes to the recording session; a failure to start is logged and recording goes on without metrics.

#include <memory>

#include "sprof/launch.hpp"
#include "sprof/sysmon.hpp"

namespace sprof::sysmon {

class SystemMonitorHook : public launch::RecordHooks {
 public:
  // `options.profile_dir` and `root_pid` are filled in from the record context.
  explicit SystemMonitorHook(MonitorOptions options) : options_(std::move(options)) {}
  void on_start(const launch::RecordContext& context) override;
  Status on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) override;
  std::string cost_name() const override { return "system_monitor"; }
  const SystemMonitor* monitor() const { return monitor_.get(); }

 private:
  MonitorOptions options_;
  std::unique_ptr<SystemMonitor> monitor_;
};

}  // namespace sprof::sysmon
