#pragma once
// `sprof diff`, rendered: text for a terminal, or one JSON object.

#include <cstddef>
#include <string>
#include <vector>

#include "sprof/profile_diff.hpp"

namespace sprof::render {

// The step-time distributions, the `top` functions and kernels with the largest changes per step,
// system metrics and rule verdicts that changed, then the regressions beyond their thresholds.
std::string diff_text(const report::ProfileDiff& diff, const std::vector<report::Regression>& regressions, size_t top,
                      bool color, size_t width);

// Every function and kernel (largest change first); times in seconds, intervals as [lo, hi].
std::string diff_json(const report::ProfileDiff& diff, const std::vector<report::Regression>& regressions);

// -o diff.html: one self-contained page (d3 and d3-flame-graph inlined) with the differential
// flame graph (widths from NEW or BASE, colour NEW - BASE per step: red grew, blue shrank) and the
// text's tables (the `top` functions and kernels).
std::string diff_html(const report::ProfileDiff& diff, const std::vector<report::Regression>& regressions, size_t top);

}  // namespace sprof::render
