#pragma once
// sprof top's screen: a header and the functions table, fitted to a terminal of `width` columns
// and `height` lines (the rows that do not fit are left out), as py-spy top lays it out.

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

}  // namespace sprof::render
