#include "render/terminal_screen.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

namespace sprof::render {

TerminalScreen::TerminalScreen(bool interactive) : interactive_(interactive) {
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

TerminalScreen::~TerminalScreen() {
  if (!interactive_) return;
  fmt::print("\x1b[?25h\x1b[?1049l");
  std::fflush(stdout);
  if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

bool TerminalScreen::draw(const std::string& text) {
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

std::pair<size_t, size_t> TerminalScreen::size() const {
  winsize ws{};
  if (interactive_ && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    return {ws.ws_col, ws.ws_row};
  }
  return {120, 40};
}

}  // namespace sprof::render
