#pragma once
// The selection flags: the names of modes and phases, the step and time flags of a run
// (query::parse_run_selection reads their text), and the time view of samples.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sprof/result.hpp"
#include "sprof/modes.hpp"
#include "sprof/run_selection.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::cli {

// Names accepted by --mode/--start-mode/--end-mode and --start-phase/--end-phase.
std::vector<std::string> profile_mode_names();
std::vector<std::string> step_phase_names();
Mode mode_from_name(const std::string& name);  // name already validated

// --mode, --start-step, --end-step, --start-time and --end-time of commands that pick windows of a
// run (export, gpu); `what` is what they select ("samples", "GPU work").
void add_run_selection_options(CLI::App* app, query::RunSelectionText& flags, const std::string& what);

// --on-cpu, --all-threads and its old spelling --idle of the commands that weigh samples as
// functions or stacks; `what` names what they weigh ("Function tables").
struct TimeViewFlags {
  bool on_cpu = false;
  bool all_threads = false;
  bool idle = false;  // --idle, when the command has it
  report::TimeView view() const { return {on_cpu, all_threads || idle}; }
  bool given() const { return on_cpu || all_threads || idle; }
};
void add_time_view_flags(CLI::App* app, TimeViewFlags& flags, const std::string& what, bool old_spelling = true);

}  // namespace sprof::cli
