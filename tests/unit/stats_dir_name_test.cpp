#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include <catch2/catch.hpp>

#include "sprof/stats_dir.hpp"
#include "test_support.hpp"

using namespace sprof::store;
using sprof::Mode;
using sprof::Phase;
using sprof::kAllModes;
using sprof::kAllPhases;
using sprof::parse_mode;
using sprof::parse_phase;

TEST_CASE("current-format names parse as smdebug parses them", "[stats_dir]") {
  auto parsed = parse_stats_dir_name(
      "prestepzero-*-start-1596585376012363.8_train-1-stepstart-1596585376017246.5");
  REQUIRE(parsed.ok());
  CHECK(parsed->format == NameFormat::current);
  CHECK(parsed->start.mode == Mode::prestepzero);
  CHECK_FALSE(parsed->start.step.has_value());
  CHECK(parsed->start_step_value() == -1.0);
  CHECK(parsed->start.phase == Phase::start);
  CHECK(parsed->start.time_us == 1596585376012363.8);
  CHECK(parsed->end.mode == Mode::train);
  CHECK(parsed->end.step == 1);
  CHECK(parsed->end.phase == Phase::stepstart);

  auto close = parse_stats_dir_name("eval-3-stepend-10_posthookclose-*-end-20.5");
  REQUIRE(close.ok());
  CHECK(std::isinf(close->end_step_value()));
  CHECK(close->end.phase == Phase::end);
  CHECK(close->start.time_us == 10.0);
}

TEST_CASE("every mode and phase spelling round-trips", "[stats_dir]") {
  for (Mode mode : kAllModes) {
    CHECK(parse_mode(to_string(mode)) == mode);
  }
  for (Phase phase : kAllPhases) CHECK(parse_phase(to_string(phase)) == phase);
  CHECK_FALSE(parse_mode("TRAIN").has_value());  // smdebug matches exact spellings
  CHECK_FALSE(parse_phase("StepStart").has_value());
}

TEST_CASE("old-format names map onto modes and phases", "[stats_dir]") {
  auto step = parse_stats_dir_name("1596585374963238.0_1596585376008161.0_151-algo-1_2");
  REQUIRE(step.ok());
  CHECK(step->format == NameFormat::old);
  CHECK(step->node_id == "151-algo-1");
  CHECK(step->start.mode == Mode::global);
  CHECK(step->end.mode == Mode::global);
  CHECK(step->start.step == 2);
  CHECK(step->end.step == 2);
  CHECK(step->start.phase == Phase::stepstart);
  CHECK(step->end.phase == Phase::stepend);

  auto pre = parse_stats_dir_name("1596585363775342.0_1596585373504789.0_151-algo-1_-1");
  REQUIRE(pre.ok());
  CHECK(pre->start.mode == Mode::prestepzero);
  CHECK(pre->start.phase == Phase::start);
  CHECK(pre->end.step == 0);
  CHECK(pre->end.phase == Phase::stepstart);
}

TEST_CASE("names that fit neither format are rejected with a reason", "[stats_dir]") {
  for (const char* bad : {"", "foo", "a_b_c", "train-1-stepstart-1_train-1-stepend",
                          "train-1-stepstart-1_bogus-1-stepend-2",
                          "train-one-stepstart-1_train-1-stepend-2",
                          "train-1-middle-1_train-1-stepend-2",
                          "train-1-stepstart-0x10_train-1-stepend-2",
                          "train-1-stepstart-nan_train-1-stepend-2",
                          "train-1-stepstart-1_train-1-stepend-2_x",
                          "1.0_2.0_node_x", "1.0_x_node_1", "1.0_2.0__1"}) {
    auto parsed = parse_stats_dir_name(bad);
    INFO(bad);
    CHECK_FALSE(parsed.ok());
    if (!parsed.ok()) CHECK_FALSE(parsed.error().message.empty());
  }
}

TEST_CASE("Python int() and float() text", "[stats_dir]") {
  CHECK(parse_python_int(" 7 ") == 7);
  CHECK(parse_python_int("+7") == 7);
  CHECK(parse_python_int("007") == 7);
  CHECK(parse_python_int("-0") == 0);
  CHECK_FALSE(parse_python_int("1.0").has_value());
  CHECK_FALSE(parse_python_int("").has_value());
  CHECK_FALSE(parse_python_int("+").has_value());
  CHECK_FALSE(parse_python_int("99999999999999999999").has_value());
  CHECK(parse_python_float("1e3") == 1000.0);
  CHECK(parse_python_float(".5") == 0.5);
  CHECK(parse_python_float("5.") == 5.0);
  CHECK(parse_python_float("  12.25\n") == 12.25);
  CHECK(std::isinf(*parse_python_float("Infinity")));
  CHECK(std::isinf(*parse_python_float("1e999")));
  CHECK(parse_python_float("1e-999") == 0.0);
  CHECK(std::isnan(*parse_python_float("NaN")));
  for (const char* bad : {"", ".", "e5", "1e", "0x1p3", "1.0.0", "--1", "inf5"}) {
    INFO(bad);
    CHECK_FALSE(parse_python_float(bad).has_value());
  }
}

TEST_CASE("python_float_repr round-trips every double", "[stats_dir]") {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<uint64_t> bits;
  for (int i = 0; i < 20000; ++i) {
    uint64_t b = bits(rng);
    double x;
    std::memcpy(&x, &b, sizeof x);
    if (std::isnan(x)) continue;
    std::string text = python_float_repr(x);
    auto back = parse_python_float(text);
    INFO(text);
    REQUIRE(back.has_value());
    CHECK(*back == x);
    CHECK(std::signbit(*back) == std::signbit(x));
  }
}

TEST_CASE("names written by smdebug's Python format back to themselves", "[stats_dir]") {
  // Real names: the old-format dirs in smdebug's fixtures (Python repr of time.time()*1e6).
  namespace fs = std::filesystem;
  fs::path fixtures = sprof::test::smdebug_fixtures() / "cprofile_python_stats";
  if (!fs::is_directory(fixtures)) FAIL("missing " << fixtures);
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(fixtures)) {
    std::string name = entry.path().filename().string();
    auto parsed = parse_stats_dir_name(name);
    REQUIRE(parsed.ok());
    CHECK(format_stats_dir_name(*parsed) == name);
    ++seen;
  }
  CHECK(seen > 0);
  StatsDirName current;
  current.start = {Mode::eval, 4, Phase::stepend, 1596585376012363.8};
  current.end = {Mode::posthookclose, std::nullopt, Phase::end, 1.5e16};
  std::string text = format_stats_dir_name(current);
  auto back = parse_stats_dir_name(text);
  REQUIRE(back.ok());
  CHECK(format_stats_dir_name(*back) == text);
  CHECK(back->end.time_us == 1.5e16);
}

TEST_CASE("a time below 1e-4 is written without an exponent's '-'", "[stats_dir]") {
  // Found by fuzz_stats_dir_name: repr(3e-18) is "3e-18", which splits into five fields.
  auto parsed = parse_stats_dir_name("train-21-stepend-0.8_eval-1-stepstart-.0000000000000000030");
  REQUIRE(parsed.ok());
  std::string text = format_stats_dir_name(*parsed);
  CHECK(text == "train-21-stepend-0.8_eval-1-stepstart-0.000000000000000003");
  auto back = parse_stats_dir_name(text);
  REQUIRE(back.ok());
  CHECK(back->end.time_us == parsed->end.time_us);
  // Large times keep repr()'s exponent form, which has no '-'.
  StatsDirName big;
  big.end.time_us = 1.5e16;
  CHECK(format_stats_dir_name(big).ends_with("-1.5e+16"));
}
