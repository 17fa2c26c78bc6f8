#pragma once
// The RecordHooks that writes the per-interval stats directories at the end of `sprof record`,
// once the sample logs are closed, and notes what it wrote in sprof.json ("interval_stats":
// profiler directory, timer, counts).

#include <filesystem>
#include <functional>
#include <optional>

#include "sprof/interval_stats.hpp"
#include "sprof/manifest.hpp"
#include "sprof/launch.hpp"
#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::intervals {

class IntervalStatsHook : public launch::RecordHooks {
 public:
  // What the stats are cut along and which intervals get a directory, known only once the
  // recording has ended: the step timeline, and the profiling window resolved against it
  // (unset include: WriteOptions::include).
  struct Inputs {
    timeline::StepTimeline timeline;
    std::function<bool(const ProcessInterval&)> include;
  };
  // Given the manifest on_finish holds (sprof.json on disk is not final yet).
  using InputsSource =
      std::function<Result<Inputs>(const std::filesystem::path& dir, const store::Manifest& manifest)>;

  IntervalStatsHook(WriteOptions options, InputsSource inputs);

  void on_start(const launch::RecordContext& context) override { interrupted_ = context.interrupted; }
  // Fails only when a file could not be written (ErrorKind::io: the recording is incomplete);
  // other problems are logged and listed in the manifest's errors. A stop
  // request (RecordContext::interrupted) ends the writing early; the manifest says so.
  Status on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) override;
  std::string cost_name() const override { return "stats_directories"; }

  const std::optional<WriteSummary>& summary() const { return summary_; }

 private:
  WriteOptions options_;
  InputsSource inputs_;
  std::function<bool()> interrupted_ = [] { return false; };
  std::optional<WriteSummary> summary_;
};

}  // namespace sprof::intervals
