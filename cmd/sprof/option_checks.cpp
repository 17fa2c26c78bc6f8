#include "option_checks.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace sprof::cli {
namespace {

// The number CLI11 will convert the text to, or NaN when the text is no number at all (CLI11's
// own conversion reports that case).
double as_number(const std::string& text, bool& is_number) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  is_number = end != text.c_str() && *end == '\0';
  return value;
}

}  // namespace

CLI::Validator finite_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        bool is_number = false;
        double value = as_number(text, is_number);
        if (!is_number) return {};
        if (!std::isfinite(value)) return fmt::format("{} is not a finite number", text);
        if (value < min || value > max) return fmt::format("{} is not in [{:g}, {:g}]", text, min, max);
        return {};
      },
      fmt::format("FINITE in [{:g}, {:g}]", min, max));
}

CLI::Validator finite_positive(double max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        bool is_number = false;
        double value = as_number(text, is_number);
        if (!is_number) return {};
        if (!std::isfinite(value)) return fmt::format("{} is not a finite number", text);
        if (value <= 0 || value > max) return fmt::format("{} is not in (0, {:g}]", text, max);
        return {};
      },
      fmt::format("FINITE in (0, {:g}]", max));
}

}  // namespace sprof::cli
