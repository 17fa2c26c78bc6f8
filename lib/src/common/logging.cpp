#include "sprof/logging.hpp"

#include <unistd.h>

#include <cstdlib>
#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace sprof {

bool color_wanted(const std::string& choice, int fd) {
  if (choice == "always") return true;
  if (choice == "never" || std::getenv("NO_COLOR") != nullptr) return false;
  return isatty(fd) != 0;
}

void configure_logging(int verbose, bool quiet, bool color) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(color ? spdlog::color_mode::always
                                                                          : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>("sprof", sink);
  logger->set_pattern("sprof: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  if (quiet) {
    spdlog::set_level(spdlog::level::err);
  } else if (verbose >= 2) {
    spdlog::set_level(spdlog::level::trace);
  } else if (verbose == 1) {
    spdlog::set_level(spdlog::level::debug);
  } else {
    spdlog::set_level(spdlog::level::info);
  }
}

}  // namespace sprof
