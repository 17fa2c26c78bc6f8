// GPUUtilization derived from kernels: per tick interval, the share with a kernel running.

#include <catch2/catch.hpp>

#include "rules/gpu_utilization.hpp"

using namespace sprof;

namespace {

store::SystemMetric cpu_tick(double t, const char* node = "algo-1") {
  store::SystemMetric m;
  m.type = "cpu";
  m.name = "cpu0";
  m.dimension = "CPUUtilization";
  m.value = 50;
  m.node_id = node;
  m.timestamp = t;
  return m;
}

store::GpuOp kernel(int32_t device, int64_t start_ns, int64_t end_ns) {
  store::GpuOp op;
  op.kind = store::GpuOpKind::kernel;
  op.name = "k";
  op.device = device;
  op.start_ns = start_ns;
  op.end_ns = end_ns;
  return op;
}

}  // namespace

TEST_CASE("kernel-busy share per tick interval, overlaps counted once", "[rules][gpu]") {
  // Ticks at epoch 100, 101, 102 s; the trace's clock is epoch - 100 s.
  std::vector<store::SystemMetric> system = {cpu_tick(100), cpu_tick(101), cpu_tick(102)};
  store::GpuTrace trace;
  const int64_t s = 1'000'000'000;
  trace.ops = {kernel(0, 0, s / 4), kernel(0, s / 8, s / 2),         // overlap: busy [0, 0.5) s
               kernel(0, s - s / 10, s + s / 10),                    // crosses the second tick
               kernel(1, s + s / 2, 2 * s),                          // device 1: half of interval 2
               kernel(0, 5 * s, 6 * s)};                             // after the last tick: ignored
  trace.ops.push_back(kernel(0, s / 2, s / 2));                      // zero length: ignored
  auto out = rules::gpu_utilization_from_kernels(trace, system, 100 * s);
  REQUIRE(out.size() == 4);  // 2 intervals × 2 GPUs
  auto value = [&](const char* gpu, double t) {
    for (const auto& m : out) {
      if (m.name == gpu && m.timestamp == t) {
        CHECK(m.type == "gpu");
        CHECK(m.dimension == "GPUUtilization");
        CHECK(m.node_id == "algo-1");
        return m.value;
      }
    }
    FAIL("no " << gpu << " at " << t);
    return -1.0;
  };
  CHECK(value("gpu0", 101) == Approx(60.0));  // [0, 0.5) + [0.9, 1.0)
  CHECK(value("gpu0", 102) == Approx(10.0));  // [1.0, 1.1)
  CHECK(value("gpu1", 101) == Approx(0.0));
  CHECK(value("gpu1", 102) == Approx(50.0));
}

TEST_CASE("uuid, not ordinal, names a GPU; NVML's metrics win", "[rules][gpu]") {
  std::vector<store::SystemMetric> system = {cpu_tick(0), cpu_tick(1)};
  store::GpuTrace trace;
  trace.devices = {store::GpuDevice{3, "A100", "ffff", 108, 0, 8, 0}};
  trace.ops = {kernel(3, 0, 250'000'000)};
  auto out = rules::gpu_utilization_from_kernels(trace, system, 0);
  REQUIRE(out.size() == 1);
  CHECK(out[0].name == "gpu0");
  CHECK(out[0].value == Approx(25.0));

  store::SystemMetric nvml = cpu_tick(0);
  nvml.type = "gpu";
  nvml.dimension = "GPUUtilization";
  system.push_back(nvml);
  CHECK(rules::gpu_utilization_from_kernels(trace, system, 0).empty());
  CHECK(rules::gpu_utilization_from_kernels(store::GpuTrace{}, {cpu_tick(0), cpu_tick(1)}, 0).empty());
}
