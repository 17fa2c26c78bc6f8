#pragma once
// The profiling-window flags (--python-start-step, --python-num-steps, --python-start-time,
// --python-duration), shared by record and stats-dirs.

#include <optional>

#include <CLI/CLI.hpp>

#include "sprof/profiling_window.hpp"
#include "sprof/result.hpp"

namespace sprof::cli {

struct WindowFlags {
  int64_t start_step = 0;
  int64_t num_steps = 0;
  double start_time_s = 0;
  double duration_s = 0;
  CLI::Option* start_step_opt = nullptr;
  CLI::Option* num_steps_opt = nullptr;
  CLI::Option* start_time_opt = nullptr;
  CLI::Option* duration_opt = nullptr;
};

void add_window_flags(CLI::App* sub, WindowFlags& f);

// The window the flags give; nullopt when none was given. A step range and a time range together,
// or values out of range, are usage errors.
Result<std::optional<window::ProfilingWindow>> window_from_flags(const WindowFlags& f);

}  // namespace sprof::cli
