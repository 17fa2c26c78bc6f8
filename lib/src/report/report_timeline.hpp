#pragma once
// The report's timeline panel (ReportViews::timeline), built from the raw samples and GPU files.

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "sprof/open_profile.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/report_views.hpp"
#include "sprof/result.hpp"

namespace sprof::report {

// One row per sampled thread: each sample's leaf function over the time it stands for.
void add_thread_rows(const store::ProfileSamples& samples, int64_t job_start_us, Timeline& timeline);
// One row per GPU device and stream: its kernels, copies and memsets.
Status add_gpu_rows(const query::Profile& profile, int64_t job_start_us, Timeline& timeline);
// Merges spans too short to draw until at most max_segments remain (and says so in the note).
void fit_timeline(Timeline& timeline, double duration_s, size_t max_segments);

}  // namespace sprof::report
