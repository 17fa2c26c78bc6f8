#pragma once
// smdebug's modes and step phases: one type each for the whole library, spelled on disk as
// smdebug spells them (stats directory names "train"/"prestepzero"/"stepstart", trace lanes
// "Step:ModeKeys.TRAIN", markers).

#include <cstdint>
#include <optional>
#include <string_view>

namespace sprof {

// smdebug's PythonProfileModes, in its order (enum values 1 to 6, the order it iterates modes
// in); the first four are its ModeKeys, the modes a step can have.
enum class Mode : uint8_t { train, eval, predict, global, prestepzero, posthookclose };
inline constexpr Mode kAllModes[] = {Mode::train,  Mode::eval,        Mode::predict,
                                     Mode::global, Mode::prestepzero, Mode::posthookclose};
inline constexpr bool is_step_mode(Mode mode) { return mode <= Mode::global; }

std::string_view to_string(Mode mode);                   // "train", ..., "prestepzero", "posthookclose"
std::optional<Mode> parse_mode(std::string_view text);   // those six spellings
std::optional<Mode> parse_step_mode(std::string_view text);  // "train", "eval", "predict", "global"
std::string_view mode_key_name(Mode mode);               // "TRAIN" (ModeKeys.TRAIN), "PRESTEPZERO", ...

// smdebug's Phase.
enum class Phase : uint8_t { start, stepstart, forwardpassend, stepend, end };
inline constexpr Phase kAllPhases[] = {Phase::start, Phase::stepstart, Phase::forwardpassend, Phase::stepend,
                                       Phase::end};

std::string_view to_string(Phase phase);                 // "start", "stepstart", "forwardpassend", "stepend", "end"
std::optional<Phase> parse_phase(std::string_view text);

}  // namespace sprof
