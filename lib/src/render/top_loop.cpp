// sprof top's loop: frames on a timer, keys on an interactive terminal.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "render/terminal_screen.hpp"
#include "sprof/top_render.hpp"

namespace sprof::render {

TopScreenEnd run_top_screen(live::TopSession& session, TopScreenOptions options, bool interactive,
                            const volatile std::sig_atomic_t& stop) {
  TerminalScreen screen(interactive);
  auto next = std::chrono::steady_clock::now();
  while (stop == 0) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      std::tie(options.width, options.height) = screen.size();
      if (!screen.draw(top_screen(session.view(options.sort), options))) return TopScreenEnd::output_gone;
      next = now + std::chrono::seconds(1);
      if (session.finished()) return TopScreenEnd::finished;
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
    if (key == 'q' || key == 'Q') return TopScreenEnd::quit;
    live::TopSort before = options.sort;
    if (key == 'o' || key == '1') options.sort = live::TopSort::own;
    if (key == 't' || key == '2') options.sort = live::TopSort::total;
    if (key == 'n' || key == '3') options.sort = live::TopSort::name;
    if (options.sort != before) next = std::chrono::steady_clock::now();  // redraw at once
  }
  return TopScreenEnd::stopped;
}

}  // namespace sprof::render
