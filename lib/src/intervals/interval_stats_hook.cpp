#include "sprof/interval_stats_hook.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/profile_samples.hpp"

namespace sprof::intervals {

IntervalStatsHook::IntervalStatsHook(WriteOptions options, InputsSource inputs)
    : options_(std::move(options)), inputs_(std::move(inputs)) {}

Status IntervalStatsHook::on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) {
  auto fail = [&](const Error& error) -> Status {
    std::string message = "per-interval stats not written: " + error.message;
    // A write that failed (a full disk) fails the recording; anything else is noted.
    if (error.kind == ErrorKind::io) return make_error(ErrorKind::io, "{}", message);
    spdlog::warn("{}", message);
    manifest.errors.push_back(message);
    return {};
  };
  if (std::none_of(manifest.processes.begin(), manifest.processes.end(),
                   [](const store::ManifestProcess& p) { return p.samples > 0; })) {
    return {};  // nothing was sampled
  }
  auto profile = store::load_profile_samples(output_dir);
  if (!profile.ok()) return fail(profile.error());
  store::attach_manifest(*profile, manifest);
  timeline::StepTimeline timeline;
  WriteOptions options = options_;
  if (inputs_) {
    auto inputs = inputs_(output_dir, manifest);
    if (!inputs.ok()) return fail(inputs.error());
    timeline = std::move(inputs->timeline);
    if (inputs->include) options.include = std::move(inputs->include);
  }
  options.progress = [this](size_t done, size_t total) {
    if (interrupted_()) return false;
    return !options_.progress || options_.progress(done, total);
  };
  auto written = write_interval_stats(*profile, timeline, options);
  if (!written.ok()) return fail(written.error());
  summary_ = *written;
  if (written->interrupted) {
    std::string message = fmt::format(
        "stopped by a signal after {} of {} stats directories; `sprof stats-dirs {}` writes them all",
        written->directories, written->to_write, output_dir.string());
    spdlog::warn("{}", message);
    manifest.errors.push_back(message);
  }

  set_manifest_section(manifest, *written, options_);
  return {};
}

}  // namespace sprof::intervals
