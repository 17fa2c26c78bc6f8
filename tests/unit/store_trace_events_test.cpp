// Trace event reader/writer: the trace files and counts of smdebug's own tests
// (tests/profiler/core/test_smtfprofiler_events.py, test_horovodprofiler_events.py,
// test_algorithm_metric_readers.py and test_utils.py in awslabs/sagemaker-debugger at commit
// 3b82de312a404a0caf64c6cb860b584fac8b5163; their files are vendored in
// third_party/smdebug-test-resources), node-id handling, and the writer's exact format and
// rotation.

#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "sprof/system_metrics.hpp"
#include "sprof/trace_events.hpp"
#include "sprof/trace_writer.hpp"
#include "test_support.hpp"

using namespace sprof::store;
using sprof::Mode;
using sprof::test::smdebug_fixtures;

TEST_CASE("smdebug test_smtfprofiler_events counts", "[store][trace]") {
  auto path = smdebug_fixtures() / "1589314018481947000_1234-testhost_model_timeline.json";
  auto events = read_trace_file(path);
  REQUIRE(events.ok());
  CHECK(events->size() == 49);
  CHECK(events->at(10).node_id == "1234-testhost");
  CHECK(filter_trace_events(*events, 0, to_microseconds(1589314018.4700, TimeUnit::seconds)).size() == 39);
  auto first = std::min_element(events->begin(), events->end(),
                                [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
  auto last = std::max_element(events->begin(), events->end(),
                               [](const auto& a, const auto& b) { return a.end_us < b.end_us; });
  CHECK(first->start_us == 1589314018458743);
  CHECK(last->end_us == 1589314018481947);
  CHECK(first->lane == "DataIterator");
  CHECK(std::string(first->file_type()) == "DetailedframeworkMetrics");
}

TEST_CASE("smdebug test_horovodprofiler_events counts", "[store][trace]") {
  auto events = read_trace_file(smdebug_fixtures() /
                                "horovod_timeline_traces/framework/pevents/2020070206/"
                                "1593673051473228_88359-8c859046be41.ant.amazon.com_horovod_timeline.json");
  REQUIRE(events.ok());
  CHECK(events->size() == 19);
  CHECK(filter_trace_events(*events, 1593673051473000, 1593673051473228).size() == 12);
  auto first = std::min_element(events->begin(), events->end(),
                                [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
  auto last = std::max_element(events->begin(), events->end(),
                               [](const auto& a, const auto& b) { return a.end_us < b.end_us; });
  CHECK(first->start_us == 1592860696000713);
  CHECK(last->end_us == 1593673051473228);
  CHECK(std::string(first->file_type()).empty());
}

TEST_CASE("smdebug test_algorithm_metric_readers counts", "[store][trace]") {
  auto traces = read_trace_events(smdebug_fixtures() / "test_traces");
  REQUIRE(traces.ok());
  CHECK(filter_trace_events(traces->events, to_microseconds(1589930980, TimeUnit::seconds),
                            to_microseconds(1589930995, TimeUnit::seconds))
            .size() == 4);

  auto model = read_trace_events(smdebug_fixtures() / "model_timeline_traces");
  REQUIRE(model.ok());
  auto in_range = filter_trace_events(model->events, 1590461127873222, 1590461139949971);
  CHECK(in_range.size() == 54);
  CHECK(in_range.at(0).node_id == "0001");

  auto horovod = read_trace_events(smdebug_fixtures() / "horovod_timeline_traces");
  REQUIRE(horovod.ok());
  CHECK(filter_trace_events(horovod->events, 1593673051472800, 1593673051473100).size() == 15);
}

TEST_CASE("step markers of smdebug's merge_traces are read with their args", "[store][trace]") {
  auto traces = read_trace_events(smdebug_fixtures() / "merge_traces");
  REQUIRE(traces.ok());
  CHECK(traces->warnings.empty());
  auto step = std::find_if(traces->events.begin(), traces->events.end(),
                           [](const TraceEvent& e) { return e.name == "Step:ModeKeys.TRAIN"; });
  REQUIRE(step != traces->events.end());
  CHECK(step->lane == "Step:ModeKeys.TRAIN");
  CHECK(step->start_us == 1594662605425850 + 2664345);
  CHECK(step->duration_us() == 9020725);
  CHECK(step->pid == 905);
  CHECK(step->args.text("step_num") == "0");
  CHECK(step->node_id == "905-b88ab1bb8259");
}

TEST_CASE("trace file names and node ids follow smdebug's rules", "[store][trace]") {
  auto name = parse_trace_file_name("/p/framework/pevents/2020071317/1594662624718694_905-algo-1_pythontimeline.json");
  REQUIRE(name);
  CHECK(name->end_us == 1594662624718694);
  CHECK(name->node_id == "905-algo-1");
  CHECK(name->suffix == "pythontimeline.json");
  CHECK_FALSE(parse_trace_file_name("/p/framework/other/1594662624718694_905_pythontimeline.json"));
  CHECK_FALSE(parse_trace_file_name("/p/framework/pevents/1594662624718694_pythontimeline.json"));
  CHECK(normalize_node_id("51-algo-1") == "algo-1-51");
  CHECK(normalize_node_id("0001") == "0001");
  CHECK(normalize_node_id("1234-testhost") == "1234-testhost");
}

TEST_CASE("B/E pairs are matched per lane, instants ignored", "[store][trace]") {
  std::string text = R"([
{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1000000}},
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Forward"}},
{"name": "outer", "pid": 1, "ph": "B", "ts": 10},
{"name": "inner", "pid": 1, "ph": "B", "ts": 20, "args": {"pid": 42}},
{"name": "", "pid": 1, "ph": "E", "ts": 30},
{"name": "tick", "pid": 1, "ph": "i", "ts": 35, "s": "g"},
{"name": "", "pid": 1, "ph": "E", "ts": 50, "args": {"pid": 7}},
{"name": "", "pid": 3, "ph": "E", "ts": 60}
])";
  TraceEventParser parser(TraceSource::python_timeline);
  std::vector<TraceEvent> events;
  REQUIRE(parser.parse(text, "7-algo-2", "inline", events).ok());
  REQUIRE(events.size() == 2);
  CHECK(events[0].name == "inner");
  CHECK(events[0].start_us == 1000020);
  CHECK(events[0].end_us == 1000030);
  CHECK(events[0].pid == 42);  // args of the "B" event when the "E" event has none
  CHECK(events[1].name == "outer");
  CHECK(events[1].duration_us() == 40);
  CHECK(events[1].pid == 7);
  CHECK(events[1].lane == "Forward");
  CHECK(events[1].node_id == "algo-2-7");
}

TEST_CASE("events are taken as they are parsed, as from a whole document", "[store][trace]") {
  // The reader takes each event as the parser finishes it (a file is never held whole as a
  // document); what it reads must still be what reading the whole document gives.
  TraceEventParser parser(TraceSource::python_timeline);
  std::vector<TraceEvent> events;
  REQUIRE(parser.parse(R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Lane", "start_time_since_epoch_in_micros": 1000}},
{"name": "open", "pid": 1, "ph": "B", "ts": 5}
])", "1-host", "a.json", events).ok());
  CHECK(events.empty());

  SECTION("a file that is not JSON leaves nothing behind: events, lane names, start time, open events") {
    auto bad = parser.parse(R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Bad", "start_time_since_epoch_in_micros": 9000}},
{"name": "x", "pid": 1, "ph": "X", "ts": 1, "dur": 1},
{"name": "", "pid": 1, "ph": "E", "ts": 6},
{"name": "cut", "pid": 1, "ph": "X", "ts": 1, )", "1-host", "b.json", events);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message == "trace file b.json is not valid JSON");
    CHECK(events.empty());
    REQUIRE(parser.parse(R"([{"name": "", "pid": 1, "ph": "E", "ts": 8}])", "1-host", "c.json", events).ok());
    REQUIRE(events.size() == 1);
    CHECK(events[0].name == "open");
    CHECK(events[0].lane == "Lane");
    CHECK(events[0].start_us == 1005);
    CHECK(events[0].end_us == 1008);
  }

  SECTION("of an object, the last traceEvents member counts, and only it") {
    REQUIRE(parser.parse(R"({"other": [{"name": "no", "pid": 1, "ph": "X", "ts": 1, "dur": 1}],
"traceEvents": [{"name": "first", "pid": 1, "ph": "X", "ts": 1, "dur": 1}, {"name": "", "pid": 1, "ph": "E", "ts": 9}],
"traceEvents": [7, [{"name": "nested", "pid": 1, "ph": "X", "ts": 1, "dur": 1}],
                {"name": "second", "pid": 1, "ph": "X", "ts": 2, "dur": 3,
                 "args": {"b": {"y": [1, 2], "x": "z"}, "a": 1.5}}],
"deviceProperties": [{"name": "no", "pid": 1, "ph": "X", "ts": 1, "dur": 1}]})", "1-host", "d.json", events).ok());
    REQUIRE(events.size() == 1);
    CHECK(events[0].name == "second");
    CHECK(events[0].start_us == 1002);
    // Keys in order and nested values as text, as the document gave them.
    REQUIRE(events[0].args.items().size() == 2);
    CHECK(events[0].args.items()[0].key == "a");
    CHECK(events[0].args.items()[1].key == "b");
    CHECK(events[0].args.text("b") == R"({"x":"z","y":[1,2]})");
    // The open "B" event of the first file is still open: the first member's "E" did not count.
    REQUIRE(parser.parse(R"([{"name": "", "pid": 1, "ph": "E", "ts": 20}])", "1-host", "e.json", events).ok());
    REQUIRE(events.size() == 2);
    CHECK(events[1].name == "open");
  }

  SECTION("an object whose last traceEvents member is not an array is refused") {
    auto refused = parser.parse(R"({"traceEvents": [{"name": "x", "pid": 1, "ph": "X", "ts": 1, "dur": 1}],
"traceEvents": {"name": "x"}})", "1-host", "f.json", events);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message == "trace file f.json is not a JSON array of trace events");
    CHECK(events.empty());
    CHECK_FALSE(parser.parse("{}", "1-host", "g.json", events).ok());
    CHECK_FALSE(parser.parse("5", "1-host", "h.json", events).ok());
    CHECK(parser.parse("[]", "1-host", "i.json", events).ok());
    CHECK(events.empty());
  }
}

TEST_CASE("the writer produces smdebug's format and the reader reads it back", "[store][trace]") {
  sprof::test::TempDir dir;
  const int64_t base = 1594662605425850;
  TraceWriterOptions options;
  options.profile_dir = dir.path();
  options.node_id = "905-algo-1";
  options.base_us = base;
  auto writer = TraceWriter::create(options);
  REQUIRE(writer.ok());
  REQUIRE(write_step(*writer, Mode::train, 1, base + 11993413, base + 11993413 + 87137, 905).ok());
  REQUIRE(write_dataloader_next(*writer, "_MultiProcessingDataLoaderIter", base + 100, base + 200, 905).ok());
  REQUIRE(write_step(*writer, Mode::train, 2, base + 12081597, base + 12081597 + 83633, 905).ok());
  REQUIRE(writer->close().ok());
  REQUIRE(writer->files().size() == 1);
  auto path = writer->files()[0];
  // Named by the end of its latest event: step 2 ends at base + 12081597 + 83633.
  CHECK(path == dir.path() / "framework/pevents/2020071317" /
                    fmt::format("{}_905-algo-1_pythontimeline.json", base + 12081597 + 83633));
  CHECK_FALSE(std::filesystem::exists(writer->temp_path()));

  std::string text = sprof::test::read_file(path);
  CHECK(text.rfind("[\n"
        R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 1594662605425850}},)"
        "\n"
        R"({"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},)"
                   "\n",
                   0) == 0);
  CHECK(text.find(R"({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Step:ModeKeys.TRAIN"}},)") !=
        std::string::npos);
  CHECK(text.find(
            R"({"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 11993413, "dur": 87137, "args": {"pid": 905, "step_num": "1"}},)") !=
        std::string::npos);
  CHECK(text.substr(text.size() - 2) == "\n]");
  CHECK(nlohmann::json::parse(text).size() == 9);  // 2 + 2 lanes x 2 metadata + 3 events

  auto back = read_trace_events(dir.path());
  REQUIRE(back.ok());
  REQUIRE(back->events.size() == 3);
  CHECK(back->events[0].name == "Step:ModeKeys.TRAIN");
  CHECK(back->events[0].start_us == base + 11993413);
  CHECK(back->events[0].node_id == "algo-1-905");
  CHECK(back->events[1].lane == "DataLoaderIter");
  CHECK(back->events[1].name == "_MultiProcessingDataLoaderIter::GetNext");
}

TEST_CASE("the writer rotates on the close interval and announces lanes again", "[store][trace]") {
  sprof::test::TempDir dir;
  const int64_t base = 1700000000000000;  // 2023-11-14 22:13:20 UTC
  TraceWriterOptions options;
  options.profile_dir = dir.path();
  options.node_id = "1-algo-1";
  options.base_us = base;
  options.rotate_interval_s = 10;
  auto writer = TraceWriter::create(options);
  REQUIRE(writer.ok());
  REQUIRE(write_step(*writer, Mode::train, 0, base + 1000000, base + 2000000, 1).ok());
  REQUIRE(write_step(*writer, Mode::eval, 0, base + 3000000, base + 4000000, 1).ok());
  // round(10.6 s) = 11 > 10: this event goes to a new file.
  REQUIRE(write_step(*writer, Mode::eval, 1, base + 9000000, base + 10600000, 1).ok());
  REQUIRE(writer->poll(base + 30000000).ok());  // idle long enough: closes the second file
  REQUIRE(writer->files().size() == 2);
  REQUIRE(writer->close().ok());
  CHECK(writer->files()[0].filename() == "1700000004000000_1-algo-1_pythontimeline.json");
  CHECK(writer->files()[1].filename() == "1700000010600000_1-algo-1_pythontimeline.json");
  std::string second = sprof::test::read_file(writer->files()[1]);
  // EVAL keeps pid 2 for the writer's life and is announced again in the new file; TRAIN is absent.
  CHECK(second.find(R"({"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Step:ModeKeys.EVAL"}})") !=
        std::string::npos);
  CHECK(second.find("Step:ModeKeys.TRAIN") == std::string::npos);
  auto back = read_trace_events(dir.path());
  REQUIRE(back.ok());
  REQUIRE(back->events.size() == 3);
  CHECK(back->events[2].lane == "Step:ModeKeys.EVAL");
  CHECK(back->events[2].args.integer("step_num") == 1);

  CHECK_FALSE(TraceWriter::create(TraceWriterOptions{dir.path(), "bad_node"}).ok());
}
