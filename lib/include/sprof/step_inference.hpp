#pragma once
// Training steps inferred from the sampled stacks (`record --step-fn`), where no bootstrap could
// report them; the method is described at the top of lib/src/timeline/step_inference.cpp.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"

namespace sprof::timeline {

// --step-fn: steps inferred from the sampled stacks of each process's step thread (see
// step_inference.cpp), as marker lines (docs/markers.md) ready for markers/step_fn.log. `known`
// is the bootstrap's timeline: its modes are used, and processes with their own steps are skipped.
// A name may be "module:function" (matched by its part after ':'); steps are of default_mode
// where the bootstrap reported no mode. A note warns where back-to-back calls may have merged.
// bootstrap_counts: the bootstrap was injected with the names, so a process it reports from
// counted the calls itself (none: the function never ran there) and only the others are inferred.
struct InferredSteps {
  std::string lines;
  std::map<int32_t, int64_t> steps_per_pid;
  std::vector<std::string> notes;  // processes skipped, functions never seen
};
Result<InferredSteps> infer_steps(const std::filesystem::path& profile_dir,
                                  const std::vector<std::string>& step_functions, const StepTimeline& known,
                                  Mode default_mode = Mode::train, bool bootstrap_counts = false);

// Whether a sampled function (co_qualname on 3.11+, co_name before) is the QUALNAME a user gave:
// equal, or QUALNAME's last dotted component where the interpreter only knows co_name.
bool step_function_matches(std::string_view qualname, std::string_view function_name);

}  // namespace sprof::timeline
