#pragma once
// sprof top's screen: a header and the functions table, fitted to a terminal of `width` columns
// and `height` lines (the rows that do not fit are left out), as py-spy top lays it out.

#include <csignal>
#include <cstddef>
#include <string>

#include "sprof/top.hpp"

namespace sprof::render {

struct TopScreenOptions {
  size_t width = 80;
  size_t height = 24;
  live::TopSort sort = live::TopSort::own;
  bool color = false;
  std::string target;  // "pid 1234" or the command line
};

// Lines separated by '\n', no trailing clear codes (the caller positions the cursor).
std::string top_screen(const live::TopView& view, const TopScreenOptions& options);

// The screen of a running top: `session`'s view drawn every second, at once after a key on an
// `interactive` terminal (q quits, leaving the job running; o/1, t/2, n/3 sort by own, total,
// name), until the session finishes, `stop` turns non-zero (a signal) or the output is gone.
// `options`' width and height are the terminal's, read before each frame.
enum class TopScreenEnd { quit, finished, stopped, output_gone };
TopScreenEnd run_top_screen(live::TopSession& session, TopScreenOptions options, bool interactive,
                            const volatile std::sig_atomic_t& stop);

}  // namespace sprof::render
