#pragma once
// A full-screen view on a terminal (`sprof top`): the alternate screen without a cursor and a raw,
// non-blocking stdin while it lives, restored on every way out; or plain frames on a pipe.

#include <termios.h>

#include <cstddef>
#include <string>
#include <utility>

namespace sprof::render {

class TerminalScreen {
 public:
  explicit TerminalScreen(bool interactive);
  ~TerminalScreen();
  TerminalScreen(const TerminalScreen&) = delete;
  TerminalScreen& operator=(const TerminalScreen&) = delete;

  // Draws one frame; false when the output is gone (a reader such as `head` closed the pipe).
  bool draw(const std::string& text);
  // Columns and rows; 120 x 40 when not a terminal.
  std::pair<size_t, size_t> size() const;

 private:
  bool interactive_;
  bool restore_ = false;
  termios saved_{};
};

}  // namespace sprof::render
