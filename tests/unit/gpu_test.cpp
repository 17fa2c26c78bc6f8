#include <catch2/catch.hpp>

#include "sprof/gpu.hpp"
#include "test_support.hpp"

using namespace sprof;
using namespace sprof::gpu;

TEST_CASE("gpu modes and the plans they make", "[gpu]") {
  CHECK(parse_gpu_mode("auto").value() == GpuMode::automatic);
  CHECK(parse_gpu_mode("on").value() == GpuMode::on);
  CHECK(parse_gpu_mode("off").value() == GpuMode::off);
  CHECK(parse_gpu_mode("yes").error().kind == ErrorKind::usage);
  CHECK(to_string(GpuMode::automatic) == "auto");

  auto off = plan_gpu(GpuMode::off, {});
  REQUIRE(off.ok());
  CHECK_FALSE(off->enabled);
  CHECK(off->why_off == "--gpu off");

  test::TempDir dir;
  CHECK(plan_gpu(GpuMode::off, dir.path() / "libcupti.so").error().kind == ErrorKind::usage);
  auto missing = plan_gpu(GpuMode::automatic, dir.path() / "libcupti.so");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::usage);
  CHECK_THAT(missing.error().message, Catch::Contains("libcupti.so: no such file"));

  // auto follows the build: on exactly when the injection library sits beside libsprof.so.
  auto automatic = plan_gpu(GpuMode::automatic, {});
  REQUIRE(automatic.ok());
  CHECK(automatic->enabled == !injection_library().empty());
  auto on = plan_gpu(GpuMode::on, {});
  CHECK(on.ok() == !injection_library().empty());
  if (!on.ok()) CHECK(on.error().kind == ErrorKind::usage);
}

TEST_CASE("the injection's per-process states are read in pid order, bad files named", "[gpu]") {
  test::TempDir dir;
  test::write_file(dir.path() / "202.json",
                   R"({"pid": 202, "state": "other_tool_attached", "detail": "nsys", "cupti": "/x/libcupti.so.12",)"
                   R"( "cupti_source": "torch", "cupti_version": 24, "monotonic_ns": 5})");
  test::write_file(dir.path() / "101.json", R"({"pid": 101, "state": "no_driver", "detail": "none"})");
  test::write_file(dir.path() / "303.json", "{\"pid\": 303, \"sta");  // cut short
  test::write_file(dir.path() / "404.json.tmp", "{}");                 // the injection's temporary
  // A recording process that exited normally: its counts are extra keys.
  test::write_file(dir.path() / "505.json",
                   R"({"pid": 505, "state": "recording", "detail": "CUPTI 13.0 (/x) records kernels to /o/505.gpu",)"
                   R"( "cupti": "/x", "cupti_source": "system", "cupti_version": 130001, "records": 9, "chunks": 2,)"
                   R"( "dropped": 0, "untimed": 1, "monotonic_ns": 7})");
  std::vector<std::string> problems;
  auto states = read_gpu_states(dir.path(), problems);
  REQUIRE(states.size() == 3);
  CHECK(states[0].pid == 101);
  CHECK(states[0].state == "no_driver");
  CHECK(states[1].cupti_source == "torch");
  CHECK(states[1].cupti_version == 24);
  CHECK(states[2].state == "recording");
  CHECK(states[2].cupti_version == 130001);
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("303.json"));

  std::vector<std::string> none;
  CHECK(read_gpu_states(dir.path() / "missing", none).empty());
  CHECK(none.empty());
  CHECK_FALSE(parse_gpu_state(R"({"state": "recording"})", "x.json").ok());
}

TEST_CASE("the manifest's gpu section round-trips", "[gpu]") {
  store::Manifest manifest;
  GpuSection section;
  section.mode = "on";
  section.enabled = true;
  section.library = "/usr/lib/libsprof_cupti.so";
  section.cupti = std::string(kCuptiOrder);
  section.driver = true;
  GpuProcessState p;
  p.pid = 7;
  p.state = "recording";
  p.detail = "CUPTI 13.0 (/usr/local/cuda/lib64/libcupti.so.13) records kernels, memcpy, memset to /out/gpu/7.gpu";
  p.cupti_version = 130001;
  section.processes.push_back(p);
  set_gpu_section(manifest, section);
  auto back = gpu_section(manifest);
  REQUIRE(back);
  CHECK(back->mode == "on");
  CHECK(back->enabled);
  CHECK(back->library == section.library);
  CHECK(back->driver);
  REQUIRE(back->processes.size() == 1);
  CHECK(back->processes[0].detail == p.detail);
  CHECK(back->processes[0].cupti_version == 130001);
  CHECK_FALSE(gpu_section(store::Manifest{}));
}
