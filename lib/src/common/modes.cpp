#include "sprof/modes.hpp"

#include <utility>

namespace sprof {
namespace {

constexpr std::pair<Mode, std::string_view> kModeNames[] = {
    {Mode::train, "train"},   {Mode::eval, "eval"},       {Mode::predict, "predict"},
    {Mode::global, "global"}, {Mode::prestepzero, "prestepzero"}, {Mode::posthookclose, "posthookclose"},
};

constexpr std::pair<Mode, std::string_view> kModeKeyNames[] = {
    {Mode::train, "TRAIN"},   {Mode::eval, "EVAL"},       {Mode::predict, "PREDICT"},
    {Mode::global, "GLOBAL"}, {Mode::prestepzero, "PRESTEPZERO"}, {Mode::posthookclose, "POSTHOOKCLOSE"},
};

constexpr std::pair<Phase, std::string_view> kPhaseNames[] = {
    {Phase::start, "start"},     {Phase::stepstart, "stepstart"}, {Phase::forwardpassend, "forwardpassend"},
    {Phase::stepend, "stepend"}, {Phase::end, "end"},
};

template <class T, size_t N>
std::string_view name_of(const std::pair<T, std::string_view> (&names)[N], T value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return names[0].second;  // unreachable for a valid enumerator
}

template <class T, size_t N>
std::optional<T> value_of(const std::pair<T, std::string_view> (&names)[N], std::string_view text) {
  for (const auto& [v, name] : names) {
    if (name == text) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Mode mode) { return name_of(kModeNames, mode); }
std::optional<Mode> parse_mode(std::string_view text) { return value_of(kModeNames, text); }
std::optional<Mode> parse_step_mode(std::string_view text) {
  auto mode = parse_mode(text);
  if (mode && !is_step_mode(*mode)) return std::nullopt;
  return mode;
}
std::string_view mode_key_name(Mode mode) { return name_of(kModeKeyNames, mode); }
std::string_view to_string(Phase phase) { return name_of(kPhaseNames, phase); }
std::optional<Phase> parse_phase(std::string_view text) { return value_of(kPhaseNames, text); }

}  // namespace sprof
