// The GPU activity file (docs/gpu-activity.md): chunks written with the injection's encoder read
// back field for field; damaged and torn chunks lose only themselves.

#include <catch2/catch.hpp>

#include "sprof/gpu_trace.hpp"
#include "store/codecs/crc32.hpp"
#include "store/gpu/gpu_activity_format.hpp"
#include "test_support.hpp"

using namespace sprof;
using namespace sprof::store;
using namespace sprof::store::gpufile;

namespace {

std::string crc_chunk(const std::string& body) { return chunk(body, [](const char* p, size_t n) { return crc32(p, n); }); }

void process(ChunkBody& b, int pid, const std::string& cupti) {
  uint64_t path = b.intern(cupti);
  b.tag(kProcess);
  b.u(uint64_t(pid));
  b.s(3);   // rank
  b.s(1);   // local rank
  b.s(8);   // world size
  b.s(1'000);
  b.s(1'700'000'000'000'000'000);
  b.u(130001);
  b.u(path);
}

void kernel(ChunkBody& b, int64_t start, int64_t end, uint64_t correlation, const std::string& name) {
  uint64_t id = b.intern(name);
  b.tag(kKernel);
  b.time(start, end);
  for (uint64_t v : {uint64_t(0), uint64_t(1), uint64_t(7), correlation, uint64_t(128), uint64_t(2), uint64_t(1),
                     uint64_t(256), uint64_t(1), uint64_t(1), uint64_t(32), uint64_t(1024), uint64_t(2048)}) {
    b.u(v);
  }
  b.u(id);
}

void api(ChunkBody& b, int64_t start, int64_t end, uint64_t correlation) {
  uint64_t id = b.intern("cudaLaunchKernel");
  b.tag(kApi);
  b.time(start, end);
  b.u(0);
  b.u(211);
  b.u(id);
  b.u(4242);
  b.u(correlation);
  b.u(0);
}

std::string sample_file() {
  std::string file = file_header();
  ChunkBody b;
  process(b, 4242, "/usr/lib/libcupti.so.13");
  uint64_t name = b.intern("NVIDIA A100"), uuid = b.intern("0123456789abcdef0123456789abcdef");
  b.tag(kDevice);
  for (uint64_t v : {uint64_t(0), name, uuid, uint64_t(108), uint64_t(40) << 30, uint64_t(8), uint64_t(0)}) b.u(v);
  api(b, 5'000, 9'000, 1);
  kernel(b, 10'000, 30'000, 1, "gemm(float*)");
  b.tag(kMemcpy);
  b.time(31'000, 35'000);
  for (uint64_t v : {uint64_t(0), uint64_t(1), uint64_t(7), uint64_t(2), uint64_t(kHtoD), uint64_t(kMemoryPageable),
                     uint64_t(kMemoryDevice), uint64_t(4096), uint64_t(1)}) {
    b.u(v);
  }
  file += crc_chunk(b.bytes());
  b.clear();
  process(b, 4242, "/usr/lib/libcupti.so.13");
  kernel(b, 40'000, 41'000, 3, "gemm(float*)");
  b.tag(kSync);
  b.time(42'000, 45'000);
  b.u(kStreamSync);
  b.u(1);
  b.s(7);
  b.u(4);
  b.tag(kLosses);
  b.u(5);
  b.u(2);
  b.u(0);
  file += crc_chunk(b.bytes());
  return file;
}

}  // namespace

TEST_CASE("GPU activity chunks read back field for field", "[gpu_activity]") {
  test::TempDir dir;
  test::write_file(dir.path() / "4242.gpu", sample_file());
  GpuTrace trace;
  REQUIRE(read_gpu_activity_file(dir.path() / "4242.gpu", trace).ok());
  sort_gpu_trace(trace);
  CHECK(trace.warnings.empty());
  REQUIRE(trace.processes.size() == 1);
  const GpuProcess& p = trace.processes[0];
  CHECK(p.pid == 4242);
  CHECK(p.rank == 3);
  CHECK(p.local_rank == 1);
  CHECK(p.world_size == 8);
  CHECK(p.cupti_version == 130001);
  CHECK(p.cupti == "/usr/lib/libcupti.so.13");
  CHECK(p.dropped_records == 5);
  CHECK(p.untimed_records == 2);
  REQUIRE(trace.devices.size() == 1);
  CHECK(trace.devices[0].name == "NVIDIA A100");
  CHECK(trace.devices[0].sm_count == 108);
  CHECK(trace.devices[0].global_memory_bytes == int64_t(40) << 30);
  CHECK(trace.devices[0].compute_major == 8);

  REQUIRE(trace.ops.size() == 3);
  const GpuOp& k = trace.ops[0];
  CHECK(k.kind == GpuOpKind::kernel);
  CHECK(k.name == "gemm(float*)");
  CHECK(k.start_ns == 10'000);
  CHECK(k.end_ns == 30'000);
  CHECK(k.stream == 7);
  CHECK(k.correlation == 1);
  CHECK(k.grid[0] == 128);
  CHECK(k.block[0] == 256);
  CHECK(k.registers_per_thread == 32);
  CHECK(k.shared_memory == 3072);
  CHECK(k.pid == 4242);
  const GpuOp& copy = trace.ops[1];
  CHECK(copy.kind == GpuOpKind::memcpy);
  CHECK(copy.name == "Memcpy HtoD (Pageable -> Device)");
  CHECK(copy.bytes == 4096);
  CHECK(trace.ops[2].start_ns == 40'000);  // the second chunk's delta coding starts afresh

  REQUIRE(trace.api_calls.size() == 1);
  CHECK(trace.api_calls[0].name == "cudaLaunchKernel");
  CHECK(trace.api_calls[0].tid == 4242);
  CHECK(trace.api_calls[0].end_ns == 9'000);
  REQUIRE(trace.syncs.size() == 1);
  CHECK(trace.syncs[0].kind == "Stream Sync");
  CHECK(trace.syncs[0].stream == 7);
}

TEST_CASE("a damaged GPU chunk loses only itself; a torn last chunk is said", "[gpu_activity]") {
  std::string file = sample_file();
  size_t second = file.find(std::string_view(kChunkMagic, 4), kFileHeaderSize + 1);
  REQUIRE(second != std::string::npos);
  test::TempDir dir;

  std::string damaged = file;
  damaged[kFileHeaderSize + kChunkPrefixSize + 3] ^= 0x5A;  // inside the first chunk's body
  test::write_file(dir.path() / "1.gpu", damaged);
  GpuTrace trace;
  REQUIRE(read_gpu_activity_file(dir.path() / "1.gpu", trace).ok());
  CHECK(trace.ops.size() == 1);  // the second chunk's kernel
  REQUIRE(trace.warnings.size() == 1);
  CHECK_THAT(trace.warnings[0], Catch::Contains("1 damaged chunk"));

  for (size_t cut = second + 1; cut < file.size(); cut += 7) {
    test::write_file(dir.path() / "2.gpu", file.substr(0, cut));
    GpuTrace torn;
    REQUIRE(read_gpu_activity_file(dir.path() / "2.gpu", torn).ok());
    CHECK(torn.ops.size() == 2);  // everything of the first chunk
    REQUIRE_FALSE(torn.warnings.empty());
  }

  test::write_file(dir.path() / "3.gpu", "not a gpu file at all");
  GpuTrace none;
  auto status = read_gpu_activity_file(dir.path() / "3.gpu", none);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().kind == ErrorKind::bad_input);
  CHECK_THAT(status.error().message, Catch::Contains("3.gpu"));
}

TEST_CASE("a profile's GPU files are merged in time order", "[gpu_activity]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "gpu");
  test::write_file(dir.path() / "gpu" / "4242.gpu", sample_file());
  test::write_file(dir.path() / "gpu" / "4242.json", "{}");  // the state file is not activity
  auto trace = read_gpu_activity(dir.path());
  REQUIRE(trace.ok());
  CHECK(trace->clock == "monotonic");
  REQUIRE(trace->ops.size() == 3);
  CHECK(std::is_sorted(trace->ops.begin(), trace->ops.end(),
                       [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; }));
  auto empty = read_gpu_activity(dir.path() / "nothing-here");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}
