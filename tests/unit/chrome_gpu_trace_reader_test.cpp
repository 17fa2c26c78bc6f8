// The streaming kineto trace reader: times exactly as written, the same records wherever the
// text's pieces end, and errors that say what is wrong.

#include <string>

#include <catch2/catch.hpp>

#include "sprof/gpu_trace.hpp"
#include "sprof/gzip.hpp"

using namespace sprof;
using namespace sprof::store;

namespace {

// Strings with escaped quotes, braces and backslashes, nested args, a top-level member after
// traceEvents (baseTimeNanoseconds) and one to skip before it.
const std::string kTrace = R"json({
  "schemaVersion": 1, "skipped": {"a": [1, {"b": "}]\"{"}], "c": "x\\"},
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "numSms": 108, "totalGlobalMem": 42314694656}],
  "distributedInfo": {"rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 77, "tid": 78,
     "ts": 4458676983543.183, "dur": 4.5, "args": {"External id": 1, "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "void k<\"}{\\\">()", "pid": 0, "tid": 7,
     "ts": 4458676983550.0005, "dur": 1.0004,
     "args": {"device": 0, "stream": 7, "correlation": 5, "grid": [2, 3, 4], "block": [64, 1, 1],
              "nested": {"deep": [[[{"x": "]"}]]]}, "registers per thread": 40, "shared memory": 400}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
     "ts": 1e1, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 6, "bytes": 4096}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 77, "tid": 78, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#12", "pid": 77, "tid": 78, "ts": 3, "dur": 100},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 20, "dur": 1,
     "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "device": 0, "correlation": 5}},
    {"ph": "f", "cat": "ac2g", "id": 5, "ts": 1}, 17, "not an event", [1, 2],
    {"ph": "X", "cat": "kernel", "name": "no time", "pid": 0, "tid": 7, "ts": "soon", "args": {}}
  ],
  "baseTimeNanoseconds": 1000
}
)json";

GpuTrace parse(const std::string& text, size_t piece) {
  auto trace = parse_chrome_gpu_trace(text, "t.json", piece);
  INFO("piece " << piece << ": " << (trace.ok() ? std::string() : trace.error().message));
  REQUIRE(trace.ok());
  return std::move(*trace);
}

std::string error_of(const std::string& text) {
  auto trace = parse_chrome_gpu_trace(text, "t.json", 3);
  REQUIRE_FALSE(trace.ok());
  return trace.error().message;
}

}  // namespace

TEST_CASE("a kineto trace reads the same wherever its pieces end", "[gpu][chrome_reader]") {
  GpuTrace whole = parse(kTrace, kTrace.size());
  REQUIRE(whole.ops.size() == 2);
  REQUIRE(whole.api_calls.size() == 1);
  REQUIRE(whole.syncs.size() == 1);
  REQUIRE(whole.steps.size() == 1);
  CHECK(whole.steps[0].step == 12);
  REQUIRE(whole.devices.size() == 1);
  CHECK(whole.devices[0].sm_count == 108);
  REQUIRE(whole.processes.size() == 1);
  CHECK(whole.processes[0].rank == 3);
  CHECK(whole.processes[0].pid == 77);
  REQUIRE(whole.warnings.size() == 1);  // the event whose ts is a string
  for (size_t piece : {1, 2, 3, 7, 64, 1000}) {
    GpuTrace t = parse(kTrace, piece);
    REQUIRE(t.ops.size() == whole.ops.size());
    for (size_t i = 0; i < t.ops.size(); ++i) {
      CHECK(t.ops[i].name == whole.ops[i].name);
      CHECK(t.ops[i].start_ns == whole.ops[i].start_ns);
      CHECK(t.ops[i].end_ns == whole.ops[i].end_ns);
      CHECK(t.ops[i].bytes == whole.ops[i].bytes);
    }
    CHECK(t.api_calls.size() == whole.api_calls.size());
    CHECK(t.syncs.size() == whole.syncs.size());
    CHECK(t.steps.size() == whole.steps.size());
    CHECK(t.devices.size() == whole.devices.size());
  }
}

TEST_CASE("times come from the number's text, exactly, plus baseTimeNanoseconds", "[gpu][chrome_reader]") {
  GpuTrace t = parse(kTrace, 5);
  const GpuOp& copy = t.ops[0];  // ts 1e1 µs: first by start
  CHECK(copy.name == "Memcpy HtoD (Pageable -> Device)");
  CHECK(copy.start_ns == 10'000 + 1000);
  CHECK(copy.end_ns == 12'000 + 1000);
  CHECK(copy.copy_kind == "HtoD");
  CHECK(copy.src_memory == "Pageable");
  CHECK(copy.dst_memory == "Device");
  const GpuOp& kernel = t.ops[1];
  CHECK(kernel.name == "void k<\"}{\\\">()");
  // 4458676983550.0005 µs: a double holds it only to ~0.5 ns; the text rounds half away from zero.
  CHECK(kernel.start_ns == 4'458'676'983'550'001 + 1000);
  CHECK(kernel.duration_ns() == 1'000);  // 1.0004 µs
  CHECK(kernel.grid[2] == 4);
  CHECK(kernel.block[0] == 64);
  CHECK(kernel.registers_per_thread == 40);
  CHECK(kernel.pid == 77);  // from its launch call
  CHECK(t.api_calls[0].start_ns == 4'458'676'983'543'183 + 1000);
  CHECK(t.api_calls[0].duration_ns() == 4'500);
  CHECK(t.syncs[0].device == 0);
  CHECK(t.syncs[0].tid == 78);
}

TEST_CASE("gzip-compressed traces stream through the inflater", "[gpu][chrome_reader]") {
  std::string packed = gzip(kTrace);
  std::string seen;
  REQUIRE(gunzip_stream(packed, "t.json.gz", size_t(1) << 20, [&](std::string_view piece) -> Status {
            seen += piece;
            return {};
          }).ok());
  CHECK(seen == kTrace);
  auto refused = gunzip_stream(packed, "t.json.gz", size_t(1) << 20, [](std::string_view) -> Status {
    return make_error(ErrorKind::bad_input, "sink says no");
  });
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "sink says no");
}

TEST_CASE("broken traces are errors that say what is wrong", "[gpu][chrome_reader]") {
  CHECK(error_of("") == "t.json: empty, not a Chrome trace");
  CHECK(error_of("  \"text\"") == "t.json: not a Chrome trace (neither an object nor an array)");
  CHECK(error_of(kTrace.substr(0, kTrace.size() / 2)) == "t.json: not valid JSON (it ends early)");
  CHECK(error_of(R"({"other": 1})") == "t.json: a JSON object without a traceEvents array: not a Chrome trace");
  CHECK(error_of(R"({"traceEvents": {"a": 1}})") == "t.json: a JSON object without a traceEvents array: not a Chrome trace");
  CHECK(error_of(R"({"traceEvents": []} x)") == "t.json: not valid JSON");
  // An element or a value that is not there: an error, never an endless scan (a fuzzer found "[}").
  CHECK(error_of("[}") == "t.json: not valid JSON");
  CHECK(error_of(R"({"traceEvents": [ , }]})") == "t.json: not valid JSON");
  CHECK(error_of(R"({"a": , "traceEvents": []})") == "t.json: not valid JSON");
  // Inside an event, the parser is lazy (On-Demand): what it does not read it does not check, so
  // a broken event is refused or skipped, never read as something else.
  auto broken = parse_chrome_gpu_trace(R"({"traceEvents": [{"ph": "X", "cat": }]})", "t.json");
  CHECK((broken.ok() ? broken->empty() : broken.error().message == "t.json: not valid JSON"));
  CHECK(error_of("[" + std::string(200, '[') + std::string(200, ']') + "]").find("nested deeper than 128 levels") !=
        std::string::npos);
  auto empty = parse_chrome_gpu_trace(R"({"traceEvents": []})", "t.json");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}
