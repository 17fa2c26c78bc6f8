// System metrics reader/writer: the files and counts of smdebug's own tests
// (tests/profiler/core/test_system_profiler_file_parser.py and test_system_metric_reader.py in
// awslabs/sagemaker-debugger at commit 3b82de312a404a0caf64c6cb860b584fac8b5163; their files are
// vendored in third_party/smdebug-test-resources), the crash-tolerance rules, and a write/read
// round trip.

#include <catch2/catch.hpp>

#include "sprof/system_metrics.hpp"
#include "test_support.hpp"

using namespace sprof::store;
using sprof::test::smdebug_fixtures;

namespace {

size_t count(const std::vector<SystemMetric>& m, double start, double end, std::string_view type = {}) {
  return filter_system_metrics(m, start, end, TimeUnit::seconds, type).size();
}

}  // namespace

TEST_CASE("smdebug test_system_profiler_file_parser counts", "[store][system]") {
  auto metrics = read_system_metrics_file(smdebug_fixtures() / "1591160699.algo-1.json");
  REQUIRE(metrics.ok());
  CHECK(metrics->size() == 14);
  CHECK(count(*metrics, 0, 1591170700.4570) == 14);
  CHECK(count(*metrics, 0, 1591170700.4570, "cpu") == 4);
  CHECK(count(*metrics, 0, 1591167699.9572) == 11);
  CHECK(count(*metrics, 1591169699.4579, 2591167699.9572) == 2);
  CHECK(count(*metrics, 1591169699.4579, 2591167699.9572, "gpu") == 2);
  CHECK(count(*metrics, 0, 0, "gpu") == 0);
}

TEST_CASE("a truncated last line is skipped as smdebug skips it", "[store][system]") {
  auto metrics = read_system_metrics_file(smdebug_fixtures() / "1591160699.algo-1.json.corrupt");
  REQUIRE(metrics.ok());
  CHECK(metrics->size() == 13);
  CHECK(count(*metrics, 0, 1591170700.4570) == 13);
  CHECK(count(*metrics, 0, 1591170700.4570, "cpu") == 4);
  CHECK(count(*metrics, 0, 1591167699.9572) == 11);
  CHECK(count(*metrics, 1591169699.4579, 2591167699.9572) == 1);
  CHECK(count(*metrics, 1591169699.4579, 2591167699.9572, "gpu") == 1);
  CHECK(count(*metrics, 0, 0, "gpu") == 0);
}

TEST_CASE("a corrupt line in the middle is an error naming file and line", "[store][system]") {
  std::string good = R"({"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":1.0,"NodeId":"algo-1","Timestamp":1.5})";
  std::string text = good + "\n" + good + "\n{\"Type\": \"cpu\", \"Na\n" + good + "\n";
  auto result = parse_system_metrics(text, "/p/system/incremental/2020060500/1591160699.algo-1.json");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind == sprof::ErrorKind::bad_input);
  CHECK_THAT(result.error().message, Catch::Contains("1591160699.algo-1.json") && Catch::Contains("line 3 of 4"));

  // A record missing a required key is as corrupt as broken JSON; Name alone may be missing.
  std::string no_value = R"({"Type":"cpu","Dimension":"CPUUtilization","NodeId":"algo-1","Timestamp":1.5})";
  CHECK_FALSE(parse_system_metrics(no_value + "\n" + good + "\n", "f").ok());
  std::string no_name = R"({"Type":"memory","Dimension":"","Value":3,"NodeId":"algo-1","Timestamp":1.5})";
  auto nameless = parse_system_metrics(no_name + "\n", "f");
  REQUIRE(nameless.ok());
  CHECK(nameless->at(0).name.empty());
  CHECK(nameless->at(0).value == 3.0);
  CHECK(parse_system_metrics("", "f")->empty());
}

TEST_CASE("smdebug test_system_metric_reader counts on test_traces", "[store][system]") {
  auto metrics = read_system_metrics(smdebug_fixtures() / "test_traces");
  REQUIRE(metrics.ok());
  CHECK(count(*metrics, 1591100000, 1692300000) == 78);
  CHECK(count(*metrics, 1591100000, 1692300000, "cpu") == 68);
  CHECK(count(*metrics, 1591100000, 1591167699) == 10);
  CHECK(count(*metrics, 1591748165, 1600000000) == 32);
}

TEST_CASE("system file names follow smdebug's rule", "[store][system]") {
  auto name = parse_system_file_name("/opt/ml/output/profiler/system/incremental/2020060500/1591160699.algo-1.json");
  REQUIRE(name);
  CHECK(name->node_id == "algo-1");
  CHECK(name->minute_epoch_s * 1000000 == 1591160699000000);
  CHECK_FALSE(parse_system_file_name("/x/system/incremental/2020060500/1591160699.lgo-1.json"));
  CHECK_FALSE(parse_system_file_name("/x/system/1591160699.algo-1.json"));          // needs a sub-directory
  CHECK_FALSE(parse_system_file_name("/x/system/incremental/159116069.algo-1.json")); // 10 digits
  CHECK_FALSE(parse_system_file_name("/x/system/incremental/1591160699.algo-1.json.corrupt"));
  CHECK(system_file_path("/p", 1591160640, "algo-2") == "/p/system/incremental/2020060305/1591160640.algo-2.json");
}

TEST_CASE("the writer keeps one timestamp per tick and one file per minute", "[store][system]") {
  sprof::test::TempDir dir;
  SystemMetricsWriter writer(dir.path(), "algo-1");
  std::vector<SystemRecord> tick = {{"cpu", "cpu0", "CPUUtilization", 12.5},
                                    {"cpu", "cpu0", "I/OWaitPercentage", 0.0},
                                    {"memory", "MemoryUsedPercent", "", 40.25}};
  REQUIRE(writer.write_tick(1591160699'500000, tick).ok());   // minute 1591160640
  REQUIRE(writer.write_tick(1591160700'000001, tick).ok());   // next minute 1591160700
  REQUIRE(writer.close().ok());
  REQUIRE(writer.files().size() == 2);
  CHECK(writer.files()[0] == dir.path() / "system/incremental/2020060305/1591160640.algo-1.json");
  CHECK(writer.files()[1] == dir.path() / "system/incremental/2020060305/1591160700.algo-1.json");

  std::string first = sprof::test::read_file(writer.files()[0]);
  CHECK(first.substr(0, first.find('\n')) ==
        R"({"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 12.5, "NodeId": "algo-1", "Timestamp": 1591160699.5})");

  auto back = read_system_metrics(dir.path());
  REQUIRE(back.ok());
  REQUIRE(back->size() == 6);
  CHECK(back->at(0).timestamp == 1591160699.5);
  CHECK(back->at(2).timestamp == 1591160699.5);
  CHECK(back->at(2).name == "MemoryUsedPercent");
  CHECK(back->at(2).value == 40.25);
  CHECK(back->at(3).timestamp == 1591160700.000001);
}
