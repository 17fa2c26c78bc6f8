#include "sprof/record_render.hpp"

#include <fmt/format.h>

#include "sprof/markup.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/profile_samples.hpp"

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

}  // namespace sprof::render
