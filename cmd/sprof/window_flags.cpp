#include "window_flags.hpp"

#include "option_checks.hpp"

namespace sprof::cli {

void add_window_flags(CLI::App* sub, WindowFlags& f) {
  f.start_step_opt = sub->add_option("--python-start-step", f.start_step,
                                     "Profiling window: first (global) step to get python stats");
  f.num_steps_opt = sub->add_option("--python-num-steps", f.num_steps,
                                    "Profiling window: number of steps from --python-start-step (default 1)");
  f.start_time_opt = sub->add_option("--python-start-time", f.start_time_s,
                                     "Profiling window: start, Unix epoch seconds (exclusive with the step flags)")
                         ->check(finite_in(0, 1e11));
  f.duration_opt = sub->add_option("--python-duration", f.duration_s,
                                   "Profiling window: length in seconds from --python-start-time")
                       ->check(finite_positive(kMaxDurationS));
}

Result<std::optional<window::ProfilingWindow>> window_from_flags(const WindowFlags& f) {
  bool step_flags = f.start_step_opt->count() > 0 || f.num_steps_opt->count() > 0;
  bool time_flags = f.start_time_opt->count() > 0 || f.duration_opt->count() > 0;
  if (step_flags && time_flags) {
    return make_error(ErrorKind::usage,
                      "--python-start-step/--python-num-steps and --python-start-time/--python-duration are mutually "
                      "exclusive: give a step range or a time range");
  }
  if (!step_flags && !time_flags) return std::optional<window::ProfilingWindow>{};
  auto optional_int = [](CLI::Option* o, int64_t v) { return o->count() > 0 ? std::optional<int64_t>(v) : std::nullopt; };
  auto optional_double = [](CLI::Option* o, double v) { return o->count() > 0 ? std::optional<double>(v) : std::nullopt; };
  std::string source = step_flags ? "--python-start-step/--python-num-steps" : "--python-start-time/--python-duration";
  SPROF_TRY(window::ProfilingWindow w, window::ProfilingWindow::make(optional_int(f.start_step_opt, f.start_step),
                                                                     optional_int(f.num_steps_opt, f.num_steps),
                                                                     optional_double(f.start_time_opt, f.start_time_s),
                                                                     optional_double(f.duration_opt, f.duration_s),
                                                                     source));
  return std::optional<window::ProfilingWindow>(std::move(w));
}

}  // namespace sprof::cli
