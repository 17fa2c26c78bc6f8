#include "progress_line.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"

namespace sprof::cli {

std::function<bool(size_t, size_t)> stats_directories_progress() {
  if (global_options().quiet || isatty(STDERR_FILENO) == 0) return {};
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start = Clock::now();
    Clock::time_point next{};
    bool shown = false;
  };
  auto state = std::make_shared<State>();
  return [state](size_t done, size_t total) {
    auto now = Clock::now();
    if (done >= total) {
      if (state->shown) fmt::print(stderr, "\r\x1b[K");
      state->shown = false;
    } else if (now - state->start >= std::chrono::seconds(1) && now >= state->next) {
      fmt::print(stderr, "\rsprof: writing stats directories {}/{}\x1b[K", done, total);
      std::fflush(stderr);
      state->shown = true;
      state->next = now + std::chrono::milliseconds(250);
    }
    return true;
  };
}

}  // namespace sprof::cli
