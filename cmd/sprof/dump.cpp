// sprof dump: print every Python thread's stack of a running process once (or --count times),
// like py-spy dump. Also the quickest way to check that sprof can read a process.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "command.hpp"
#include "option_checks.hpp"
#include "sprof/dump_render.hpp"
#include "sprof/launch.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::cli {
namespace {

struct DumpOptions {
  int pid = 0;
  bool json = false;
  bool blocking = false;
  bool nonblocking = false;
  int count = 1;
  double interval = 1.0;
};

Result<int> run_dump(const DumpOptions& options) {
  SPROF_TRY(auto process, pyframes::PythonProcess::attach(options.pid));
  render::DumpRequest request{options.json, !options.nonblocking, options.count, options.interval,
                              fmt::format("{}", fmt::join(launch::cmdline_of(options.pid), " "))};
  SPROF_TRY_STATUS(render::print_stack_dumps(*process, request));
  return 0;
}

}  // namespace

void add_dump(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand("dump", "Print the Python stack of every thread of a running process");
  cmd->add_option("-p,--pid", options->pid, "Process to read")->required()->check(CLI::PositiveNumber);
  cmd->add_flag("--json", options->json, "One JSON object per dump instead of text");
  auto* blocking = cmd->add_flag("--blocking", options->blocking,
                                 "Pause the Python threads while reading (default): exact stacks");
  auto* nonblocking = cmd->add_flag("--nonblocking", options->nonblocking,
                                    "Read without pausing the target; torn stacks are re-read or left out");
  blocking->excludes(nonblocking);
  cmd->add_option("-n,--count", options->count, "Dump this many times")->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--interval", options->interval, "Seconds between dumps with --count")
      ->check(finite_in(0, kMaxDurationS))
      ->capture_default_str();
  commands.push_back({cmd, [options] { return run_dump(*options); }});
}

}  // namespace sprof::cli
