#include "sprof/record_render.hpp"

#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sprof/markup.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::render {
namespace {

std::string shorten(const std::string& path, size_t max) {
  if (path.size() <= max) return path;
  return "..." + path.substr(path.size() - (max - 3));
}

}  // namespace

std::string record_summary_text(const store::Manifest& manifest, const report::SampleSummary& s,
                                const std::string& what) {
  std::string out = fmt::format(
      "sprof: sampled {:.1f} s: {} samples from {} process{}, {} thread{}; {:.2f}% invalid ({} of {})\n", s.duration_s,
      s.samples, s.processes, s.processes == 1 ? "" : "es", s.threads, s.threads == 1 ? "" : "s",
      100.0 * s.invalid_share, s.invalid, s.samples + s.invalid);
  const auto& h = manifest.health;
  if (h.behind_warnings > 0 || h.late_ticks > h.ticks / 10) {
    out += fmt::format("sprof: sampling ran late: {} of {} ticks late, worst {:.1f} ms; achieved {:.0f} Hz of {:.0f}\n",
                       h.late_ticks, h.ticks, h.max_lag_ms, h.achieved_rate_hz, manifest.rate_hz);
  }
  if (!s.top.empty() && s.kept_s > 0) {
    out += fmt::format("Top functions by self time ({}, {:.2f} s):\n", what, s.kept_s);
    out += fmt::format("  {:>6}  {:>6}  {:>9}  {}\n", "self%", "total%", "self s", "function (file:line)");
    for (const auto& f : s.top) {
      out += fmt::format("  {:>5.1f}%  {:>5.1f}%  {:>9.3f}  {} ({}:{})\n", 100.0 * f.self_s / s.kept_s,
                         100.0 * f.total_s / s.kept_s, f.self_s, terminal_safe(f.name), terminal_safe(shorten(f.file, 60)),
                         f.first_line);
    }
  }
  return out;
}

Result<std::string> record_summary(const std::filesystem::path& dir, const store::Manifest& manifest,
                                   const report::TimeView& view, bool gil_only) {
  SPROF_TRY(query::Profile opened, query::Profile::open(dir));
  SPROF_TRY(const store::ProfileSamples* samples, opened.samples());
  const store::ProfileSamples& profile = *samples;
  query::SampleFilter filter = report::time_view_filter(view, profile);
  filter.gil_only = gil_only;
  report::SampleSummary summary = report::summarize(profile, filter, 10);
  return record_summary_text(manifest, summary, view.describe() + (gil_only ? ", GIL holders" : ""));
}

std::string record_closing_text(const recorder::Recording& recording, const report::TimeView& view, bool gil_only,
                                const std::string& trace_windows) {
  const launch::RecordResult& result = recording.result;
  std::string out;
  if (result.sampled_any) {
    auto summary = record_summary(result.output_dir, result.manifest, view, gil_only);
    if (summary.ok()) {
      out += *summary;
    } else {
      spdlog::warn("cannot read back the profile for the summary: {}", summary.error().message);
    }
  }
  if (std::string text = recording.steps.text(); !text.empty()) {
    out += fmt::format("sprof: {}\n", text);
  } else if (result.sampled_any) {
    out += fmt::format("sprof: {}\n", timeline::kNoStepsHint);
  }
  if (recording.interval_stats) out += fmt::format("sprof: {}\n", recording.interval_stats->text());
  if (!trace_windows.empty()) out += fmt::format("sprof: {}\n", trace_windows);
  const std::string dir = result.output_dir.string();
  if (result.write_errors.empty()) return out + fmt::format("sprof: wrote {}\n", dir);
  out += fmt::format("sprof: the profile in {} is incomplete: {} write{} failed (above); it reads up to the last "
                     "complete sample chunk, and `sprof stats-dirs {}` finishes it once there is room\n",
                     dir, result.write_errors.size(), result.write_errors.size() == 1 ? "" : "s", dir);
  if (result.manifest.exit_status) {
    out += fmt::format("sprof: the command itself exited with status {}\n", *result.manifest.exit_status);
  }
  return out;
}

std::string upload_closing_text(const remote::LiveUploadResult& up) {
  const std::string local = up.local_dir.string();
  if (up.not_uploaded.empty()) return fmt::format("sprof: uploaded {} to {}\n", local, up.url);
  std::string out;
  for (const std::string& f : up.not_uploaded) out += fmt::format("sprof: not uploaded: {}\n", f);
  out += fmt::format("sprof: {} of {} files not uploaded to {}; the profile is whole in {}, and `sprof upload {} {}` "
                     "finishes the upload\n", up.not_uploaded.size(), up.files, up.url, local, local, up.url);
  return out;
}

std::string upload_summary_text(const remote::UploadSummary& summary, const std::string& dir, const std::string& url,
                                bool quiet) {
  std::string out;
  if (!quiet) {
    out += fmt::format("sprof: {} of {} files uploaded ({} bytes), {} already there\n", summary.uploaded, summary.files,
                       summary.bytes, summary.skipped);
  }
  if (summary.failed.empty()) return out;
  for (const std::string& f : summary.failed) out += fmt::format("sprof: not uploaded: {}\n", f);
  out += fmt::format("sprof: {} file{} not uploaded; `sprof upload {} {}` uploads the rest\n", summary.failed.size(),
                     summary.failed.size() == 1 ? "" : "s", dir, url);
  return out;
}

std::function<bool(size_t, size_t)> stats_directories_progress(bool show) {
  if (!show) return {};
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start = Clock::now();
    Clock::time_point next{};
    bool shown = false;
  };
  auto state = std::make_shared<State>();
  return [state](size_t done, size_t total) {
    auto now = Clock::now();
    if (done >= total) {
      if (state->shown) fmt::print(stderr, "\r\x1b[K");
      state->shown = false;
    } else if (now - state->start >= std::chrono::seconds(1) && now >= state->next) {
      fmt::print(stderr, "\rsprof: writing stats directories {}/{}\x1b[K", done, total);
      std::fflush(stderr);
      state->shown = true;
      state->next = now + std::chrono::milliseconds(250);
    }
    return true;
  };
}

void RecordStatusLine::on_progress(const launch::RecordProgress& p) {
  double share = p.samples + p.invalid == 0 ? 0.0 : 100.0 * double(p.invalid) / double(p.samples + p.invalid);
  fmt::print(stderr, "\rsprof: {:.1f} s, {} samples, {} process{}, {} thread{}, {:.1f}% invalid\x1b[K", p.elapsed_s,
             p.samples, p.processes, p.processes == 1 ? "" : "es", p.threads, p.threads == 1 ? "" : "s", share);
  std::fflush(stderr);
  shown_ = true;
}

Status RecordStatusLine::on_finish(const std::filesystem::path&, store::Manifest&) {
  clear();
  return {};
}

void RecordStatusLine::clear() {
  if (shown_) fmt::print(stderr, "\r\x1b[K");
  shown_ = false;
}

}  // namespace sprof::render
