// gzip reading and writing against the real gzip tool: files it compresses read back, files we
// compress it reads back, damage is an error that names the source.

#include <cstdlib>
#include <random>

#include <catch2/catch.hpp>

#include "sprof/gzip.hpp"
#include "test_support.hpp"

using namespace sprof;
using namespace sprof::store;

namespace {

std::string json_like(size_t bytes) {
  std::string out = "[";
  std::mt19937 rng(7);
  while (out.size() < bytes) {
    out += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void gemm_kernel<" + std::to_string(rng() % 40) +
           ">\", \"ts\": " + std::to_string(1'700'000'000'000'000 + rng() % 100000) + ", \"dur\": " +
           std::to_string(rng() % 5000) + "},\n";
  }
  return out + "{}]";
}

std::string random_bytes(size_t n) {
  std::mt19937 rng(11);
  std::string out(n, '\0');
  for (char& c : out) c = char(rng());
  return out;
}

std::string run_gzip(const test::TempDir& dir, const std::string& data, const std::string& flags) {
  test::write_file(dir.path() / "in", data);
  std::string cmd = "gzip " + flags + " -c '" + (dir.path() / "in").string() + "' > '" + (dir.path() / "out").string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return test::read_file(dir.path() / "out");
}

std::string run_gunzip(const test::TempDir& dir, const std::string& data) {
  test::write_file(dir.path() / "in.gz", data);
  std::string cmd = "gzip -dc '" + (dir.path() / "in.gz").string() + "' > '" + (dir.path() / "plain").string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return test::read_file(dir.path() / "plain");
}

}  // namespace

TEST_CASE("gzip's own files read back, at every level and with a name in the header", "[gzip]") {
  test::TempDir dir;
  for (const std::string& data : {std::string(), std::string("a"), json_like(300'000), random_bytes(70'000),
                                  std::string(200'000, 'x')}) {
    for (const char* flags : {"-1", "-6", "-9", "-9 -n"}) {
      std::string packed = run_gzip(dir, data, flags);
      REQUIRE(is_gzip(packed));
      auto back = gunzip(packed, "t.gz", size_t(1) << 30);
      REQUIRE(back.ok());
      CHECK(*back == data);
    }
  }
}

TEST_CASE("what gzip() writes, gzip -dc reads, and it compresses", "[gzip]") {
  test::TempDir dir;
  for (const std::string& data : {std::string(), std::string("abc"), json_like(2'000'000), random_bytes(200'000),
                                  std::string(300'000, '\0')}) {
    std::string packed = gzip(data);
    CHECK(run_gunzip(dir, packed) == data);
    auto back = gunzip(packed, "ours", size_t(1) << 30);
    REQUIRE(back.ok());
    CHECK(*back == data);
  }
  std::string text = json_like(2'000'000);
  CHECK(gzip(text).size() * 4 < text.size());          // JSON traces shrink several times
  CHECK(gzip(random_bytes(100'000)).size() < 100'100);  // incompressible data: stored blocks
}

TEST_CASE("two members read as one stream, as gzip -dc", "[gzip]") {
  std::string packed = gzip("first ") + gzip("second");
  auto back = gunzip(packed, "m.gz", 1 << 20);
  REQUIRE(back.ok());
  CHECK(*back == "first second");
}

TEST_CASE("damaged gzip data is an error naming the source, never a crash", "[gzip]") {
  std::string good = gzip(json_like(20'000));
  for (size_t cut = 0; cut < good.size(); cut += 37) {
    auto r = gunzip(good.substr(0, cut), "cut.gz", 1 << 20);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::bad_input);
    CHECK_THAT(r.error().message, Catch::StartsWith("cut.gz: "));
  }
  std::string crc = good;
  crc[crc.size() - 6] ^= 1;
  CHECK_THAT(gunzip(crc, "crc.gz", 1 << 20).error().message, Catch::Contains("CRC-32"));
  CHECK_THAT(gunzip(good, "big.gz", 1000).error().message, Catch::Contains("size limit"));
  CHECK_THAT(gunzip("plain text", "p", 1000).error().message, Catch::Contains("not gzip"));
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string bad = good;
    bad[10 + rng() % (bad.size() - 10)] ^= char(1 + rng() % 255);
    auto r = gunzip(bad, "flip.gz", 1 << 20);
    if (!r.ok()) CHECK(r.error().kind == ErrorKind::bad_input);
  }
}
