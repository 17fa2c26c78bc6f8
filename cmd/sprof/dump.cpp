// sprof dump: print every Python thread's stack of a running process once (or --count times),
// like py-spy dump. Also the quickest way to check that sprof can read a process.

#include <time.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "option_checks.hpp"
#include "sprof/dump_render.hpp"
#include "sprof/launch.hpp"
#include "sprof/pyframes.hpp"
#include "sprof/clock.hpp"

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

double unix_now() { return static_cast<double>(realtime_ns()) / 1e9; }

Result<int> run_dump(const DumpOptions& options) {
  SPROF_TRY(auto process, pyframes::PythonProcess::attach(options.pid));
  render::StackDump dump(*process);
  pyframes::SampleOptions sample_options;
  sample_options.blocking = !options.nonblocking;
  // A one-off non-blocking dump reads again rather than print a thread's stack torn.
  const int retries = options.count == 1 ? 10 : 0;
  auto next = std::chrono::steady_clock::now();
  for (int i = 0; i < options.count; ++i) {
    if (i > 0) {
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options.interval));
      std::this_thread::sleep_until(next);
    }
    SPROF_TRY(pyframes::StackSnapshot snapshot, pyframes::read_snapshot(*process, sample_options, retries));
    if (options.count == 1 && snapshot.stats.invalid > 0) {
      spdlog::warn("{} thread stack(s) of process {} could not be read consistently and are left out; "
                   "--blocking reads them exactly",
                   snapshot.stats.invalid, process->pid());
    }
    if (options.json) {
      fmt::print("{}", dump.json(snapshot, !options.nonblocking, unix_now()));
    } else {
      if (i == 0) fmt::print("{}", dump.header(fmt::format("{}", fmt::join(launch::cmdline_of(options.pid), " "))));
      fmt::print("{}", dump.text(snapshot, options.count > 1 ? std::optional<int>(i + 1) : std::nullopt, unix_now()));
    }
    std::fflush(stdout);
  }
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
