// sprof top: a live table of a running Python job's functions, refreshed every second.

#include <signal.h>
#include <unistd.h>

#include <csignal>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "command.hpp"
#include "option_checks.hpp"
#include "sprof/top.hpp"
#include "sprof/top_render.hpp"

namespace sprof::cli {
namespace {

struct TopFlags {
  live::TopOptions options;
  bool no_inject = false;
  std::string sort = "own";
};

volatile sig_atomic_t g_stop = 0;  // the signal that asked top to stop
void on_signal(int sig) { g_stop = sig; }

live::TopSort sort_of(const std::string& s) {
  return s == "total" ? live::TopSort::total : s == "name" ? live::TopSort::name : live::TopSort::own;
}

Result<int> run_top(const TopFlags& flags) {
  live::TopOptions options = flags.options;
  options.command = global_options().command;
  options.inject = !flags.no_inject;
  SPROF_TRY(std::unique_ptr<live::TopSession> session, live::TopSession::start(options));
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a closed output is seen as a failed write, and ends top cleanly
  bool interactive = isatty(STDOUT_FILENO) != 0 && isatty(STDIN_FILENO) != 0;
  std::string target = options.pid != 0 ? fmt::format("pid {}", options.pid) : fmt::format("{}", fmt::join(options.command, " "));
  render::TopScreenOptions screen{0, 0, sort_of(flags.sort), global_options().color_enabled, target};
  render::TopScreenEnd end = render::run_top_screen(*session, screen, interactive, g_stop);
  session->stop();
  // A signal or a closed output ends the launched command as record would (q leaves it running),
  // and top exits with its status.
  if (g_stop != 0 || end == render::TopScreenEnd::output_gone) session->end_command(g_stop == SIGTERM ? SIGTERM : SIGINT, 5.0);
  std::optional<int> status = session->exit_status();
  return status.value_or(0);
}

}  // namespace

void add_top(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<TopFlags>();
  CLI::App* sub = app.add_subcommand(
      "top", "Live view of a running Python job's functions (own and total time), refreshed every second; q quits and "
             "leaves the job running");
  sub->add_option("-p,--pid", flags->options.pid, "Attach to this running process")->check(CLI::PositiveNumber);
  sub->add_option("-r,--rate", flags->options.rate_hz, "Samples per second")
      ->capture_default_str()
      ->check(finite_in(1.0, 10000.0));
  sub->add_flag("--subprocesses", flags->options.subprocesses, "Also sample the target's descendant processes");
  sub->add_flag("--idle", flags->options.idle, "Count threads that are not running");
  sub->add_flag("--gil", flags->options.gil, "Only count threads holding the GIL");
  sub->add_flag("--no-inject", flags->no_inject, "Do not inject sprof's bootstrap into the command (no steps shown)");
  sub->add_option("--sort", flags->sort, "Initial sort: own, total or name (keys o, t, n switch)")
      ->check(CLI::IsMember({"own", "total", "name"}))
      ->capture_default_str();
  accept_command(sub);
  commands.push_back({sub, [flags]() { return run_top(*flags); }});
}

}  // namespace sprof::cli
