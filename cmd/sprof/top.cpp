// sprof top: a live table of a running Python job's functions, refreshed every second.

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

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

// The terminal in the state a full-screen view needs, restored on every way out.
class Screen {
 public:
  explicit Screen(bool interactive) : interactive_(interactive) {
    if (!interactive_) return;
    if (tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    fmt::print("\x1b[?1049h\x1b[?25l");  // alternate screen, no cursor
    std::fflush(stdout);
  }
  ~Screen() {
    if (!interactive_) return;
    fmt::print("\x1b[?25h\x1b[?1049l");
    std::fflush(stdout);
    if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  // false when the output is gone (a reader such as `head` closed the pipe).
  bool draw(const std::string& text) {
    std::string out;
    if (interactive_) {
      // Each line clears what a longer line left on it; the screen below the last is cleared. No
      // newline after the last line: on the terminal's last row it would scroll the title off.
      std::string_view body(text);
      if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
      out = "\x1b[H";
      for (char c : body) out += c == '\n' ? std::string("\x1b[K\n") : std::string(1, c);
      out += "\x1b[K\x1b[J";
    } else {
      out = text + "\n";
    }
    return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() && std::fflush(stdout) == 0;
  }
  std::pair<size_t, size_t> size() const {
    winsize ws{};
    if (interactive_ && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
      return {ws.ws_col, ws.ws_row};
    }
    return {120, 40};
  }

 private:
  bool interactive_;
  bool restore_ = false;
  termios saved_{};
};

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
  live::TopSort sort = sort_of(flags.sort);
  Screen screen(interactive);
  auto next = std::chrono::steady_clock::now();
  bool quit = false;
  bool output_gone = false;
  while (!quit && !g_stop) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      auto [width, height] = screen.size();
      if (!screen.draw(render::top_screen(session->view(sort), {width, height, sort, global_options().color_enabled, target}))) {
        output_gone = true;
        break;
      }
      next = now + std::chrono::seconds(1);
      if (session->finished()) break;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - std::chrono::steady_clock::now());
    if (!interactive) {
      std::this_thread::sleep_for(std::max(wait, std::chrono::milliseconds(0)));
      continue;
    }
    pollfd in{STDIN_FILENO, POLLIN, 0};
    if (poll(&in, 1, int(std::max<int64_t>(wait.count(), 0))) <= 0) continue;
    char key = 0;
    if (read(STDIN_FILENO, &key, 1) != 1) continue;
    live::TopSort before = sort;
    if (key == 'q' || key == 'Q') quit = true;
    if (key == 'o' || key == '1') sort = live::TopSort::own;
    if (key == 't' || key == '2') sort = live::TopSort::total;
    if (key == 'n' || key == '3') sort = live::TopSort::name;
    if (sort != before) next = std::chrono::steady_clock::now();  // redraw at once
  }
  session->stop();
  // A signal or a closed output ends the launched command as record would (q leaves it running),
  // and top exits with its status.
  if (g_stop || output_gone) session->end_command(g_stop == SIGTERM ? SIGTERM : SIGINT, 5.0);
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
