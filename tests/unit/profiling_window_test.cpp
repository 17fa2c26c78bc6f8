// Profiling windows: validation, smdebug's ProfileRange cases (tests/profiler/resources/
// profiler_config_parser_utils.py, current step 3), profilerconfig.json files like smdebug's
// tests/core/json_configs, and the interval predicate over a real step timeline.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sprof/bootstrap.hpp"
#include "sprof/markers.hpp"
#include "sprof/profiling_window.hpp"
#include "sprof/python_profiling.hpp"
#include "sprof/step_timeline.hpp"
#include "window/python_literal.hpp"

using namespace sprof;
using namespace sprof::window;
using Kind = ProfilingWindow::Kind;

namespace {

ProfilingWindow make_window(std::optional<int64_t> start_step, std::optional<int64_t> num_steps,
                            std::optional<double> start_time, std::optional<double> duration) {
  auto w = ProfilingWindow::make(start_step, num_steps, start_time, duration, "test");
  REQUIRE(w.ok());
  return *w;
}

PythonProfilingConfig config_ok(const std::string& text) {
  auto c = parse_profiler_config(text, "cfg.json");
  INFO(text);
  if (!c.ok()) FAIL(c.error().message);
  return *c;
}

std::string config_error(const std::string& text) {
  auto c = parse_profiler_config(text, "/x/cfg.json");
  INFO(text);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().kind == ErrorKind::bad_input);
  CHECK_THAT(c.error().message, Catch::Contains("/x/cfg.json"));
  return c.error().message;
}

// A profilerconfig.json whose PythonProfilingConfig is the given Python dict literal.
std::string python_config(const std::string& literal) {
  nlohmann::json j = {{"ProfilingParameters", {{"LocalPath", "/tmp/test"}, {"PythonProfilingConfig", literal}}}};
  return j.dump();
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE("window flags: step and time ranges are exclusive and validated", "[window]") {
  auto both = ProfilingWindow::make(2, 3, 1e9, 5.0, "--flags");
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().kind == ErrorKind::usage);
  CHECK_THAT(both.error().message, Catch::Contains("--flags"));
  CHECK_FALSE(ProfilingWindow::make(std::nullopt, 1, 1e9, std::nullopt, "x").ok());
  CHECK_FALSE(ProfilingWindow::make(-1, 3, {}, {}, "x").ok());
  CHECK_FALSE(ProfilingWindow::make(2, 0, {}, {}, "x").ok());
  CHECK_FALSE(ProfilingWindow::make({}, {}, 1e9, 0.0, "x").ok());
  CHECK_FALSE(ProfilingWindow::make({}, {}, -5.0, 1.0, "x").ok());
  CHECK_FALSE(ProfilingWindow::make({}, {}, 1e9, std::numeric_limits<double>::infinity(), "x").ok());
  CHECK(make_window({}, {}, {}, {}).kind == Kind::all);
  CHECK(make_window(0, {}, {}, {}).kind == Kind::steps);  // presence, not smdebug's truthiness
  CHECK(make_window({}, {}, {}, 5.0).kind == Kind::time);
}

TEST_CASE("WindowTracker follows smdebug's ProfileRange cases at step 3", "[window]") {
  const int64_t step = 3;
  const double now = now_s();
  SECTION("start step and num steps: [3, 5)") {
    WindowTracker t(make_window(3, 2, {}, {}));
    CHECK(t.active(step, now));
    CHECK(t.active(4, now));
    CHECK_FALSE(t.active(5, now));
  }
  SECTION("start step only: one step") {
    WindowTracker t(make_window(3, {}, {}, {}));
    CHECK(t.active(step, now));
    CHECK_FALSE(t.active(4, now));
  }
  SECTION("num steps only: from the first step checked") {
    WindowTracker t(make_window({}, 2, {}, {}));
    CHECK(t.active(step, now));
    CHECK(t.active(4, now));
    CHECK_FALSE(t.active(5, now));
  }
  SECTION("start time and duration") {
    WindowTracker t(make_window({}, {}, now, 500.0));
    CHECK(t.active(step, now));
    CHECK_FALSE(t.active(step + 1, now + 500.0));
  }
  SECTION("start time only: the first step at or after it") {
    WindowTracker t(make_window({}, {}, now, {}));
    CHECK_FALSE(t.active(2, now - 1.0));
    CHECK(t.active(step, now));
    CHECK(t.active(step, now + 1.0));  // the same step's end
    CHECK_FALSE(t.active(4, now + 2.0));
  }
  SECTION("duration only: from the first check") {
    WindowTracker t(make_window({}, {}, {}, 500.0));
    CHECK(t.active(step, now));
    CHECK(t.active(step + 1, now + 499.0));
    CHECK_FALSE(t.active(step + 2, now + 501.0));
  }
  SECTION("a start step already past") {
    WindowTracker t(make_window(1, {}, {}, {}));
    CHECK_FALSE(t.active(step, now));
  }
  SECTION("a time range already past") {
    WindowTracker t(make_window({}, {}, now - 1000.0, 500.0));
    CHECK_FALSE(t.active(step, now));
  }
  SECTION("no window and no range") {
    WindowTracker all(ProfilingWindow{});
    CHECK(all.active(123, now));
    ProfilingWindow none;
    none.kind = Kind::boundaries;
    WindowTracker boundaries(none);
    CHECK_FALSE(boundaries.active(step, now));
  }
}

TEST_CASE("profilerconfig.json: smdebug's python profiling cases", "[window][config]") {
  SECTION("step fields, cprofile and off_cpu_time") {
    auto c = config_ok(python_config("{\"StartStep\": 3, \"NumSteps\": 2, \"ProfilerName\": \"cprofile\", "
                                     "\"cProfileTimer\": \"off_cpu_time\"}"));
    CHECK(c.enabled);
    CHECK(c.window.kind == Kind::steps);
    CHECK(c.window.start_step == 3);
    CHECK(c.window.num_steps == 2);
    CHECK(c.profiler == PythonProfiler::cprofile);
    CHECK(c.timer == CprofileTimer::off_cpu_time);
  }
  SECTION("step fields only: the profiler and timer are left to the command line") {
    auto c = config_ok(python_config("{'StartStep': 3, 'NumSteps': 2}"));
    CHECK(c.enabled);
    CHECK_FALSE(c.profiler);
    CHECK_FALSE(c.timer);
  }
  SECTION("pyinstrument is sprof's sampling; its timer is ignored, even a bad one") {
    auto c = config_ok(python_config("{'StartStep': 3, 'NumSteps': 2, 'ProfilerName': 'pyinstrument', "
                                     "'cProfileTimer': 'bad_cprofile_timer'}"));
    CHECK(c.profiler == PythonProfiler::sampling);
    CHECK_FALSE(c.timer);
  }
  SECTION("no range: enabled, but only pre-step-zero and post-hook-close") {
    auto c = config_ok(python_config("{'ProfilerName': 'cprofile', 'cProfileTimer': 'cpu_time'}"));
    CHECK(c.enabled);
    CHECK(c.window.kind == Kind::boundaries);
    CHECK(c.timer == CprofileTimer::cpu_time);
  }
  SECTION("the SDK's own output, trailing comma and all; the timer 'default'") {
    auto c = config_ok(python_config(
        "{\"StartStep\": 9, \"NumSteps\": 3, \"ProfilerName\": \"cprofile\", \"cProfileTimer\": \"default\", }"));
    CHECK(c.timer == CprofileTimer::cycle);
    CHECK(timer_for_interval(*c.timer, 9) == CprofileTimer::total_time);
    CHECK(timer_for_interval(*c.timer, 10) == CprofileTimer::cpu_time);
    CHECK(timer_for_interval(*c.timer, 11) == CprofileTimer::off_cpu_time);
    CHECK(timer_for_interval(*c.timer, std::nullopt) == CprofileTimer::total_time);
  }
  SECTION("bad profiler name or timer: refused, naming the key") {
    CHECK_THAT(config_error(python_config("{'StartStep': 3, 'NumSteps': 2, 'ProfilerName': 'bad_profiler_name'}")),
               Catch::Contains("ProfilerName"));
    CHECK_THAT(config_error(python_config("{'StartStep': 3, 'NumSteps': 2, 'cProfileTimer': 'bad_cprofile_timer'}")),
               Catch::Contains("cProfileTimer"));
  }
  SECTION("step and time fields together: refused (smdebug disables the config)") {
    CHECK_THAT(config_error(python_config("{'StartStep': 3, 'NumSteps': 2, 'StartTimeInSecSinceEpoch': 1700000000, "
                                          "'DurationInSeconds': 500}")),
               Catch::Contains("mutually exclusive"));
  }
  SECTION("time fields, with the SDK's spelling Duration") {
    auto c = config_ok(python_config("{'StartTimeInSecSinceEpoch': 1700000000.5, 'Duration': 5}"));
    CHECK(c.window.kind == Kind::time);
    CHECK(c.window.start_time_s == 1700000000.5);
    CHECK(c.window.duration_s == 5.0);
  }
}

TEST_CASE("profilerconfig.json: keys, strings, disabling and errors", "[window][config]") {
  SECTION("case-insensitive keys and numbers as strings (smdebug's case_insensitive / string_data)") {
    auto c = config_ok(R"({"profilingparameters": {"localPath": "/tmp/test",
        "PYTHONprofilingCONFIG": "{\"startstep\": \"2\", \"NUMSTEPS\": \"3\", \"ProfilerName\": \"cProfile\"}"}})");
    CHECK(c.window.start_step == 2);
    CHECK(c.window.num_steps == 3);
    CHECK(c.profiler == PythonProfiler::cprofile);
  }
  SECTION("a JSON object instead of the dict string") {
    auto c = config_ok(R"({"ProfilingParameters": {"PythonProfilingConfig": {"StartStep": 5, "NumSteps": 2}}})");
    CHECK(c.window.start_step == 5);
  }
  SECTION("smdebug's invalid_string_data: \"None\" is not a number") {
    CHECK_THAT(config_error(R"({"ProfilingParameters": {"PythonProfilingConfig":
        "{\"StartStep\": \"None\", \"NumSteps\": \"None\"}"}})"),
               Catch::Contains("StartStep"));
  }
  SECTION("values the SDK rejects") {
    CHECK_THAT(config_error(python_config("{'StartStep': -1}")), Catch::Contains("start step"));
    CHECK_THAT(config_error(python_config("{'StartStep': 1, 'NumSteps': 0}")), Catch::Contains("number of steps"));
    CHECK_THAT(config_error(python_config("{'DurationInSeconds': -3}")), Catch::Contains("duration"));
    CHECK_THAT(config_error(python_config("{'StartStep': 1.5}")), Catch::Contains("StartStep"));
    CHECK_THAT(config_error(python_config("{'StartStep': True}")), Catch::Contains("StartStep"));
  }
  SECTION("python profiling off") {
    CHECK_FALSE(config_ok(R"({"DisableProfiler": true, "ProfilingParameters": {"PythonProfilingConfig": "{'StartStep': 1}"}})").enabled);
    CHECK_FALSE(config_ok(R"({"ProfilingIntervalInMilliseconds": 500})").enabled);
    CHECK_FALSE(config_ok(R"({"ProfilingParameters": {}})").enabled);
    auto detailed = config_ok(R"({"ProfilingParameters": {"DetailedProfilingConfig": "{\"StartStep\": 2}"}})");
    CHECK_FALSE(detailed.enabled);
    CHECK_THAT(detailed.disabled_reason, Catch::Contains("PythonProfilingConfig"));
    CHECK_FALSE(config_ok(python_config("{}")).enabled);
  }
  SECTION("broken files") {
    CHECK_THAT(config_error("{\"ProfilingParameters\": "), Catch::Contains("parse error"));
    CHECK_THAT(config_error("[1, 2]"), Catch::Contains("not a JSON object"));
    CHECK_THAT(config_error(python_config("{'StartStep': 2")), Catch::Contains("PythonProfilingConfig"));
    CHECK_THAT(config_error(python_config("__import__('os').system('true')")), Catch::Contains("not a literal"));
    CHECK_THAT(config_error(python_config("[1, 2]")), Catch::Contains("must be a dict"));
    CHECK_THAT(config_error(R"({"DisableProfiler": "maybe"})"), Catch::Contains("DisableProfiler"));
  }
  SECTION("a missing file is named") {
    auto c = read_profiler_config("/nonexistent/profilerconfig.json");
    REQUIRE_FALSE(c.ok());
    CHECK_THAT(c.error().message, Catch::Contains("/nonexistent/profilerconfig.json"));
  }
  SECTION("a file on disk") {
    auto path = std::filesystem::temp_directory_path() / "sprof_window_test_profilerconfig.json";
    {
      std::ofstream out(path);
      out << python_config("{'StartStep': 4, 'NumSteps': 1}");
    }
    auto c = read_profiler_config(path);
    std::filesystem::remove(path);
    REQUIRE(c.ok());
    CHECK(c->file == path);
    CHECK(c->window.start_step == 4);
  }
}

TEST_CASE("python literals", "[window][config]") {
  auto v = parse_python_literal("{'a': (1, -2.5e3, None), \"b\": [True, False], 'c': 'x\\'y\\u00e9', 10: 1_000,}");
  REQUIRE(v.ok());
  CHECK(v->at("a") == nlohmann::json::parse("[1, -2500.0, null]"));
  CHECK(v->at("b") == nlohmann::json::parse("[true, false]"));
  CHECK(v->at("c") == "x'y\xc3\xa9");
  CHECK(v->at("10") == 1000);
  CHECK_FALSE(parse_python_literal("{'a': 1} extra").ok());
  CHECK_FALSE(parse_python_literal("'open").ok());
  CHECK_FALSE(parse_python_literal(std::string(100, '[')).ok());
  CHECK_FALSE(parse_python_literal("").ok());
}

TEST_CASE("interval predicate over a step timeline", "[window]") {
  // Global steps 0..5: step g from (g + 1) * 100 ms to + 50 ms, then a gap; Unix = monotonic + 1e9 s.
  const int64_t ms = 1'000'000;
  std::string text = fmt::format("hello {} 7 7 1 1 start 3.11.2 /py\n", 10 * ms);
  for (int64_t g = 0; g < 6; ++g) {
    text += fmt::format("sb {} 7 7 train {} {}\nse {} 7 7 train {} {}\n", (g + 1) * 100 * ms, g, g,
                        (g + 1) * 100 * ms + 50 * ms, g, g);
  }
  text += fmt::format("close {} 7 7 exit\n", 800 * ms);
  timeline::StepTimelineBuilder builder;
  builder.add(store::parse_markers(text));
  builder.set_process_exit(7, 900 * ms);
  auto timeline = builder.build();
  const timeline::ProcessTimeline& p = *timeline.find(7);
  REQUIRE(p.intervals.size() == 1 + 6 + 5 + 1);
  const int64_t offset = 1'000'000'000'000'000'000;
  const double base = 1e9;

  auto selected = [&](const ProfilingWindow& w) {
    std::vector<std::string> out;
    auto flags = select_intervals(w, p, offset);
    REQUIRE(flags.size() == p.intervals.size());
    for (size_t i = 0; i < flags.size(); ++i) {
      if (!flags[i]) continue;
      const auto& in = p.intervals[i];
      if (in.kind == timeline::IntervalKind::pre_step_zero) {
        out.push_back("pre");
      } else if (in.kind == timeline::IntervalKind::post_hook_close) {
        out.push_back("post");
      } else {
        out.push_back(fmt::format("{}{}", *in.start.step, in.kind == timeline::IntervalKind::step ? "s" : "g"));
      }
    }
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(selected(ProfilingWindow{}).size() == p.intervals.size());
  // smdebug: per profiled step one interval within the step and one after it, plus pre-step-zero
  // and post-hook-close whatever the window.
  CHECK(selected(make_window(2, 3, {}, {})) == V{"pre", "2s", "2g", "3s", "3g", "4s", "4g", "post"});
  CHECK(selected(make_window(4, {}, {}, {})) == V{"pre", "4s", "4g", "post"});
  CHECK(selected(make_window({}, 2, {}, {})) == V{"pre", "0s", "0g", "1s", "1g", "post"});
  ProfilingWindow none;
  none.kind = Kind::boundaries;
  CHECK(selected(none) == V{"pre", "post"});
  // Time: intervals starting in [0.29 s, 0.465 s) after the base.
  CHECK(selected(make_window({}, {}, base + 0.29, 0.175)) == V{"pre", "2s", "2g", "3s", "3g", "post"});
  // Duration only: from the first check (step 0's start, 0.1 s) for 0.2 s.
  CHECK(selected(make_window({}, {}, {}, 0.175)) == V{"pre", "0s", "0g", "1s", "1g", "post"});
  // Start time only: the first boundary at or after 0.24 s is step 1's end, so step 1's gap
  // is profiled and nothing after it.
  CHECK(selected(make_window({}, {}, base + 0.24, {})) == V{"pre", "1g", "post"});
  CHECK(selected(make_window({}, {}, base + 10.0, {})) == V{"pre", "post"});
  // The online tracker agrees with the resolved window on every interval start.
  for (const auto& w : {make_window(2, 3, {}, {}), make_window({}, 2, {}, {}), make_window({}, {}, base + 0.24, {}),
                        make_window({}, {}, base + 0.29, 0.175), make_window({}, {}, {}, 0.175)}) {
    WindowTracker tracker(w);
    auto resolved = resolve(w, p, offset);
    for (const auto& in : p.intervals) {
      if (!in.start.step) continue;
      double t = double(in.start.t_ns + offset) / 1e9;
      CHECK(tracker.active(*in.start.step, t) == resolved.contains_step(*in.start.step, t));
    }
    // TimelineWindows (record's and stats-dirs' choice) agrees with select_intervals; a process
    // the timeline does not know keeps every interval.
    TimelineWindows windows(w, timeline, offset);
    auto flags = select_intervals(w, p, offset);
    for (size_t i = 0; i < p.intervals.size(); ++i) {
      CHECK(windows.contains(7, p.intervals[i]) == flags[i]);
      CHECK(windows.contains(8, p.intervals[i]));
    }
  }
}

TEST_CASE("the python_profiling section of sprof.json round-trips the window", "[window]") {
  store::Manifest manifest;
  auto empty = recorded_window(manifest, "m.json");
  REQUIRE(empty.ok());
  CHECK(empty->kind == Kind::all);

  PythonProfilingPlan plan;
  plan.window = make_window(2, 3, {}, {});
  plan.profiler = PythonProfiler::cprofile;
  plan.timer = CprofileTimer::cpu_time;
  set_python_profiling_section(manifest, plan);
  set_python_profiling_section(manifest, plan);
  CHECK(manifest.extra.size() == 1);
  auto j = nlohmann::json::parse(manifest.extra[0].second);
  CHECK(j["window"]["kind"] == "steps 2 3");
  CHECK(j["cprofile_timer"] == "cpu_time");
  auto back = recorded_window(manifest, "m.json");
  REQUIRE(back.ok());
  CHECK(back->spec() == "steps 2 3");

  plan.window = make_window({}, {}, 1700000000.5, 2.0);
  set_python_profiling_section(manifest, plan);
  back = recorded_window(manifest, "m.json");
  REQUIRE(back.ok());
  CHECK(back->spec() == plan.window.spec());

  // Values out of range in a hand-edited section are an error naming the file.
  manifest.extra[0].second = R"({"window": {"start_step": -4}})";
  auto bad = recorded_window(manifest, "m.json");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("m.json"));
}

TEST_CASE("flags win over --profiler-config in the python profiling plan", "[window][config]") {
  auto tmp = std::filesystem::temp_directory_path() / fmt::format("sprof-plan-{}.json", ::getpid());
  std::ofstream(tmp) << python_config("{'StartStep': 5, 'NumSteps': 2, 'ProfilerName': 'cprofile'}");
  PythonProfilingRequest request;
  request.config_file = tmp.string();
  auto from_file = plan_python_profiling(request);
  REQUIRE(from_file.ok());
  CHECK(from_file->cprofile());
  CHECK(from_file->window.spec() == "steps 5 2");
  request.window = make_window(1, 1, {}, {});
  request.profiler = PythonProfiler::sampling;
  auto flagged = plan_python_profiling(request);
  REQUIRE(flagged.ok());
  CHECK(flagged->sampled_stats());
  CHECK(flagged->window.spec() == "steps 1 1");
  CHECK(flagged->config_file == tmp.string());
  std::filesystem::remove(tmp);
  request.config_file = (tmp.parent_path() / "sprof-no-such-config.json").string();
  CHECK_FALSE(plan_python_profiling(request).ok());
}

TEST_CASE("SPROF_WINDOW and the deterministic mode's environment", "[window][bootstrap]") {
  CHECK((ProfilingWindow{}).spec() == "all");
  CHECK((make_window(2, 3, {}, {})).spec() == "steps 2 3");
  CHECK((make_window({}, 3, {}, {})).spec() == "steps - 3");
  CHECK((make_window({}, {}, 1700000000.25, {})).spec() == "time 1700000000.25 -");
  bootstrap::CprofileOptions options;
  options.profile_dir = "rel/prof";
  options.timer = CprofileTimer::cpu_time;
  options.node_host = "algo-1";
  auto env = bootstrap::cprofile_environment(options);
  auto value = [&](const std::string& name) {
    for (const auto& [k, v] : env) {
      if (k == name) return v;
    }
    return std::string("<unset>");
  };
  CHECK(value("SPROF_PYTHON_PROFILER") == "cprofile");
  CHECK(std::filesystem::path(value("SPROF_PROFILE_DIR")).is_absolute());
  CHECK(value("SPROF_NODE_HOST") == "algo-1");
  CHECK(value("SPROF_CPROFILE_TIMER") == "cpu_time");
  CHECK(value("SPROF_WINDOW") == "all");
  options.node_host.clear();
  CHECK_FALSE(bootstrap::cprofile_environment(options)[2].second.empty());
}
