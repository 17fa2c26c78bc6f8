// The marker wire format (docs/markers.md) and the parser's tolerance of bad input.

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "sprof/markers.hpp"

using namespace sprof::store;
using sprof::Mode;

namespace {

Marker parse_one(std::string_view line) {
  auto marker = parse_marker_line(line);
  INFO(line);
  REQUIRE(marker.ok());
  return std::move(marker).value();
}

}  // namespace

TEST_CASE("every marker kind parses", "[markers]") {
  Marker hello = parse_one("hello 100 42 43 1 7 start 3.11.2 /usr/bin/python3");
  CHECK(hello.t_ns == 100);
  CHECK(hello.pid == 42);
  CHECK(hello.tid == 43);
  const auto& h = std::get<Hello>(hello.data);
  CHECK(h.version == 1);
  CHECK(h.parent_pid == 7);
  CHECK(h.reason == "start");
  CHECK(h.python_version == "3.11.2");
  CHECK(h.executable == "/usr/bin/python3");

  auto sb = std::get<StepBegin>(parse_one("sb 5 1 1 train 3 9").data);
  CHECK(sb.mode == Mode::train);
  CHECK(sb.step == 3);
  CHECK(sb.global_step == 9);
  auto se = std::get<StepEnd>(parse_one("se 6 1 1 predict 0 10").data);
  CHECK(se.mode == Mode::predict);
  auto ph = std::get<ForwardPassEnd>(parse_one("ph 7 1 1 forwardpassend eval 2 4").data);
  CHECK(ph.mode == Mode::eval);
  CHECK(ph.global_step == 4);
  CHECK(std::get<ModeChange>(parse_one("mode 8 1 1 global").data).mode == Mode::global);
  CHECK(std::get<Pause>(parse_one("pause 9 1 1 stop").data).reason == "stop");
  CHECK(std::get<Resume>(parse_one("resume 10 1 1 run").data).reason == "run");
  CHECK(std::get<Pause>(parse_one("pause 9 1 1").data).reason.empty());

  auto ctr = std::get<Counter>(parse_one("ctr 11 1 1 metrics loss 0.125").data);
  CHECK(ctr.domain == "metrics");
  CHECK(ctr.name == "loss");
  CHECK(ctr.value == 0.125);
  CHECK(std::get<Counter>(parse_one("ctr 11 1 1 d n -42").data).value == -42);

  auto mark = std::get<Instant>(parse_one("mark 12 1 1 app checkpoint%20saved g").data);
  CHECK(mark.name == "checkpoint saved");
  CHECK(mark.scope == InstantScope::global);
  CHECK(std::get<Instant>(parse_one("mark 12 1 1 a b t").data).scope == InstantScope::thread);

  auto range = std::get<Range>(parse_one("rng 20 1 1 10 frame app one%20iteration").data);
  CHECK(range.begin_ns == 10);
  CHECK(range.kind == RangeKind::frame);
  CHECK(range.domain == "app");
  CHECK(range.name == "one iteration");
  CHECK(std::get<Range>(parse_one("rng 20 1 1 10 event sprof save").data).kind == RangeKind::event);
  CHECK_FALSE(parse_marker_line("rng 20 1 1 10 span app load").ok());
  CHECK_FALSE(parse_marker_line("rng 20 1 1 10 task app").ok());
  CHECK(std::string(kind_name(parse_one("rng 20 1 1 10 task a b").data)) == "rng");

  auto fw = std::get<Framework>(parse_one("fw 13 1 1 pytorch 1.13.0a0").data);
  CHECK(fw.name == "pytorch");
  CHECK(fw.version == "1.13.0a0");

  auto dli = std::get<DataLoaderInit>(parse_one("dli 20 1 1 15 3 _MultiProcessingDataLoaderIter 2 1").data);
  CHECK(dli.begin_ns == 15);
  CHECK(dli.iterator == 3);
  CHECK(dli.iterator_class == "_MultiProcessingDataLoaderIter");
  CHECK(dli.num_workers == 2);
  CHECK(dli.pin_memory);
  auto dln = std::get<DataLoaderNext>(parse_one("dln 30 1 1 25 3 stop").data);
  CHECK(dln.begin_ns == 25);
  CHECK(dln.outcome == DataLoaderOutcome::stop);

  auto ws = std::get<WorkerStart>(parse_one("wstart 40 77 77 1 42").data);
  CHECK(ws.worker_id == 1);
  CHECK(ws.parent_pid == 42);
  CHECK(std::get<WorkerStop>(parse_one("wstop 41 77 77 1 42").data).worker_id == 1);
  CHECK(std::get<Close>(parse_one("close 50 1 1 exit").data).reason == "exit");
  auto err = std::get<ReportedError>(parse_one("err 51 1 1 api:mode bad%20mode%25").data);
  CHECK(err.key == "api:mode");
  CHECK(err.message == "bad mode%");
  CHECK(std::get<Dropped>(parse_one("drop 52 1 1 17").data).count == 17);
}

TEST_CASE("string fields: '-' is empty, percent escapes, UTF-8 passes through", "[markers]") {
  CHECK(std::get<Instant>(parse_one("mark 1 1 1 - %2D p").data).domain.empty());
  CHECK(std::get<Instant>(parse_one("mark 1 1 1 - %2D p").data).name == "-");
  CHECK(std::get<Instant>(parse_one("mark 1 1 1 d a%0Ab%09c p").data).name == "a\nb\tc");
  CHECK(std::get<Instant>(parse_one("mark 1 1 1 d \xc3\xa9t\xc3\xa9 p").data).name == "\xc3\xa9t\xc3\xa9");
  CHECK_FALSE(parse_marker_line("mark 1 1 1 d a%zz p").ok());
  CHECK_FALSE(parse_marker_line("mark 1 1 1 d a%4 p").ok());
  CHECK_FALSE(parse_marker_line("mark 1 1 1 d a% p").ok());
}

TEST_CASE("malformed lines are errors that name the problem", "[markers]") {
  auto check_error = [](std::string_view line, std::string_view needle) {
    auto marker = parse_marker_line(line);
    INFO(line);
    REQUIRE_FALSE(marker.ok());
    CHECK_THAT(marker.error().message, Catch::Contains(std::string(needle)));
  };
  check_error("", "expected");
  check_error("sb 1 2", "expected");
  check_error("sb x 1 1 train 0 0", "timestamp");
  check_error("sb 1 0 1 train 0 0", "pid");
  check_error("sb 1 1 1 training 0 0", "unknown mode");
  check_error("sb 1 1 1 train -1 0", "step");
  check_error("sb 1 1 1 train 0", "needs 3 fields");
  check_error("ph 1 1 1 backwardend train 0 0", "unknown phase");
  check_error("zz 1 1 1", "unknown marker kind");
  check_error("mark 1 1 1 d n x", "unknown scope");
  check_error("dln 1 1 1 0 1 maybe", "unknown outcome");
  check_error("ctr 1 1 1 d n abc", "counter value");
  check_error("sb  1 1 1 train 0 0", "timestamp");  // two spaces: an empty field
}

TEST_CASE("extra trailing fields and CRLF are accepted", "[markers]") {
  auto sb = std::get<StepBegin>(parse_one("sb 5 1 1 train 3 9 future-field 12").data);
  CHECK(sb.global_step == 9);
  CHECK(std::get<Close>(parse_one("close 5 1 1 exit\r").data).reason == "exit");
}

TEST_CASE("the parser reassembles lines split across reads", "[markers]") {
  const std::string stream =
      "hello 1 10 10 1 1 start 3.12.1 /py\n"
      "sb 2 10 10 train 0 0\n"
      "ph 3 10 10 forwardpassend train 0 0\n"
      "se 4 10 10 train 0 0\n"
      "close 5 10 10 exit\n";
  std::vector<Marker> whole = parse_markers(stream);
  REQUIRE(whole.size() == 5);
  for (size_t chunk : {1, 2, 3, 7, 64}) {
    MarkerParser parser;
    std::vector<Marker> out;
    for (size_t i = 0; i < stream.size(); i += chunk) parser.feed(std::string_view(stream).substr(i, chunk), out);
    parser.finish();
    INFO("chunk " << chunk);
    REQUIRE(out.size() == whole.size());
    for (size_t i = 0; i < out.size(); ++i) {
      CHECK(out[i].t_ns == whole[i].t_ns);
      CHECK(out[i].data.index() == whole[i].data.index());
    }
    CHECK(parser.stats().skipped == 0);
  }
}

TEST_CASE("garbage is skipped and counted, good lines around it survive", "[markers]") {
  MarkerParser parser(64);
  std::vector<Marker> out;
  parser.feed("sb 1 5 5 train 0 0\n", out);
  parser.feed("this is not a marker\n\n", out);
  parser.feed(std::string(200, 'x'), out);  // longer than the limit, no newline yet
  parser.feed(std::string(50, 'y') + "\nse 2 5 5 train 0 0\n", out);
  parser.feed("zz 3 5 5\nse 4 5 5 train 0 0\nsb 5 5 5 tr", out);
  parser.finish();
  REQUIRE(out.size() == 3);
  CHECK(std::holds_alternative<StepBegin>(out[0].data));
  CHECK(std::holds_alternative<StepEnd>(out[1].data));
  CHECK(out[2].t_ns == 4);
  CHECK(parser.stats().markers == 3);
  CHECK(parser.stats().skipped == 5);  // prose, empty line, oversized line, unknown kind, partial tail
  CHECK(parser.stats().lines == 8);
  REQUIRE(parser.problems().size() == 5);
  CHECK_THAT(parser.problems()[2], Catch::Contains("longer than 64 bytes"));
  CHECK_THAT(parser.problems()[4], Catch::Contains("incomplete last line"));
}

TEST_CASE("random bytes never crash the parser", "[markers]") {
  std::mt19937 rng(1234);
  for (int round = 0; round < 200; ++round) {
    std::string bytes(rng() % 512, '\0');
    for (char& c : bytes) {
      // Mostly plausible characters so that some lines get deep into the field parsers.
      const char alphabet[] = "sbehlopmdtrwcfkaxgin0123456789 %-\n";
      c = rng() % 4 == 0 ? static_cast<char>(rng()) : alphabet[rng() % (sizeof(alphabet) - 1)];
    }
    MarkerParser parser(128);
    std::vector<Marker> out;
    parser.feed(bytes, out);
    parser.finish();
    CHECK(parser.stats().markers + parser.stats().skipped == parser.stats().lines);
    CHECK(parser.problems().size() <= MarkerParser::kMaxProblems);
  }
}

TEST_CASE("markers of a pid that speaks another protocol version are skipped", "[markers]") {
  const std::string stream =
      "hello 1 10 10 2 1 start 3.14.0 /py\n"
      "sb 2 10 10 train 0 0\n"
      "hello 1 11 11 1 1 start 3.12.1 /py\n"
      "sb 2 11 11 train 0 0\n";
  MarkerParser::Stats stats;
  std::vector<std::string> problems;
  auto markers = parse_markers(stream, &stats, &problems);
  REQUIRE(markers.size() == 2);
  CHECK(markers[0].pid == 11);
  CHECK(stats.skipped == 2);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("protocol version 2"));
}

TEST_CASE("mode names", "[markers]") {
  for (sprof::Mode m : {sprof::Mode::train, sprof::Mode::eval, sprof::Mode::predict, sprof::Mode::global}) {
    CHECK(sprof::parse_step_mode(sprof::to_string(m)) == m);
  }
  CHECK(std::string(sprof::mode_key_name(sprof::Mode::train)) == "TRAIN");
  CHECK_FALSE(sprof::parse_step_mode("TRAIN"));
  CHECK_FALSE(sprof::parse_step_mode("prestepzero"));  // a stats-directory mode, never a step's
  CHECK(sprof::parse_mode("prestepzero") == sprof::Mode::prestepzero);
}
