#pragma once
// The lines `sprof record` ends with: what was sampled, whether sampling ran late, and the top
// functions by self time.

#include <filesystem>
#include <string>

#include "sprof/manifest.hpp"
#include "sprof/result.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::render {

// `summary` was made with `filter` (which samples the top functions count).
// `what`: which samples the summary's functions read ("wall time of the step threads", ...).
std::string record_summary_text(const store::Manifest& manifest, const report::SampleSummary& summary,
                                const std::string& what);

// The same for the profile just written to `dir`, read back: its top functions by `view`, of
// the GIL holders only with `gil_only`. An error when the profile cannot be read.
Result<std::string> record_summary(const std::filesystem::path& dir, const store::Manifest& manifest,
                                   const report::TimeView& view, bool gil_only);

}  // namespace sprof::render
