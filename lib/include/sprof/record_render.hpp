#pragma once
// The lines `sprof record` ends with: what was sampled, whether sampling ran late, and the top
// functions by self time.

#include <string>

#include "sprof/manifest.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::render {

// `summary` was made with `filter` (which samples the top functions count).
// `what`: which samples the summary's functions read ("wall time of the step threads", ...).
std::string record_summary_text(const store::Manifest& manifest, const report::SampleSummary& summary,
                                const std::string& what);

}  // namespace sprof::render
