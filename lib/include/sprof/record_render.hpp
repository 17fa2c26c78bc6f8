#pragma once
// The lines `sprof record` ends with: what was sampled, whether sampling ran late, and the top
// functions by self time.

#include <string>

#include "sprof/manifest.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::render {

// `summary` was made with `filter` (which samples the top functions count).
std::string record_summary_text(const store::Manifest& manifest, const report::SampleSummary& summary,
                                const query::SampleFilter& filter);

}  // namespace sprof::render
