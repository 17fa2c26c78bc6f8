#pragma once
// sprof's log lines on stderr ("sprof: warning: ...") and whether its output is coloured.

#include <string>

namespace sprof {

// Whether to colour the stream `fd`: `choice` "always", "never", or "auto": when it is a terminal
// and NO_COLOR (no-color.org) is not set.
bool color_wanted(const std::string& choice, int fd);

// The default logger: "sprof: LEVEL: message" on stderr, coloured with `color`; errors only when
// `quiet`, debug with one `verbose`, trace with two.
void configure_logging(int verbose, bool quiet, bool color);

}  // namespace sprof
