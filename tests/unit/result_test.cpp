#include <catch2/catch.hpp>

#include "sprof/result.hpp"

namespace {

sprof::Result<int> parse_positive(int v) {
  if (v <= 0) return sprof::make_error(sprof::ErrorKind::usage, "--limit must be positive, got {}", v);
  return v;
}

sprof::Result<int> doubled(int v) {
  SPROF_TRY(int x, parse_positive(v));
  return 2 * x;
}

}  // namespace

TEST_CASE("Result carries a value or a typed error", "[result]") {
  auto good = doubled(21);
  REQUIRE(good.ok());
  CHECK(good.value() == 42);

  auto bad = doubled(-1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == sprof::ErrorKind::usage);
  CHECK(bad.error().message == "--limit must be positive, got -1");
}
