// The S3 client's pure parts: URLs and keys, the canonical encoding SigV4 signs, list XML, MD5
// ETags, credentials as the AWS CLI finds them; and report's step-time skew across ranks.

#include <cstdlib>
#include <fstream>

#include <catch2/catch.hpp>

#include "remote/md5.hpp"
#include "remote/role_credentials.hpp"
#include "remote/s3_http.hpp"
#include "sprof/analyze.hpp"
#include "sprof/s3.hpp"

using namespace sprof;
using namespace sprof::remote;

TEST_CASE("s3 urls and the keys sprof reads and writes") {
  auto loc = parse_s3_url("s3://my-bucket/runs/one/");
  REQUIRE(loc.ok());
  CHECK(loc->bucket == "my-bucket");
  CHECK(loc->prefix == "runs/one");
  CHECK(loc->url() == "s3://my-bucket/runs/one");
  CHECK(parse_s3_url("s3://my-bucket")->prefix.empty());
  for (const char* bad : {"http://x/y", "s3://", "s3://ab/x", "s3://Bad_Bucket/x", "s3://bucket/a/../b",
                          "s3://bucket/a//b", "s3://bucket/./b"}) {
    INFO(bad);
    auto r = parse_s3_url(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::usage);
  }
  CHECK(is_safe_key("a/b/c.json"));
  CHECK(is_safe_key("caf\xc3\xa9 \xe2\x98\x83/+=&@,;:()!*'"));
  for (const char* bad : {"", "/abs", "a/../b", "..", "a/./b", "a//b", "a/", "a\nb", "a\x7f"}) {
    INFO(bad);
    CHECK_FALSE(is_safe_key(bad));
  }
}

TEST_CASE("a named profile: a local path as it is, an S3 URL opened as one (a bad one a usage error)", "[s3]") {
  auto local = open_named_profile("runs/one", {});
  REQUIRE(local.ok());
  CHECK(local->where.path == "runs/one");
  CHECK(local->s3 == nullptr);
  auto bad = open_named_profile("s3://Bad_Bucket/x", {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::usage);
  CHECK_THAT(bad.error().message, Catch::Contains("s3://Bad_Bucket/x"));
}

TEST_CASE("s3 canonical encoding: upper-case hex, '/' kept in keys and encoded in query values") {
  CHECK(uri_encode("run 1/caf\xc3\xa9+x~y_z-.", true) == "run%201/caf%C3%A9%2Bx~y_z-.");
  CHECK(uri_encode("run1/", false) == "run1%2F");
  CHECK(uri_encode("a+b/c=", false) == "a%2Bb%2Fc%3D");
}

TEST_CASE("s3 list XML: keys entity-decoded, named and numeric") {
  std::string xml =
      "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b&#x27;c&apos;d&#233;</Key>"
      "<ETag>&quot;abc&quot;</ETag><Size>12</Size></Contents><Contents><Key>x</Key><Size>3</Size></Contents>"
      "<NextContinuationToken>t+/=</NextContinuationToken></ListBucketResult>";
  auto contents = xml_elements(xml, "Contents");
  REQUIRE(contents.size() == 2);
  CHECK(xml_value(contents[0], "Key") == "a&b'c'd\xc3\xa9");
  CHECK(xml_value(contents[0], "ETag") == "\"abc\"");
  CHECK(xml_value(xml, "IsTruncated") == "true");
  CHECK(xml_value(xml, "NextContinuationToken") == "t+/=");
  CHECK(xml_value(xml, "Missing").empty());
}

TEST_CASE("md5 matches RFC 1321's test suite, whole or fed in pieces") {
  const std::pair<std::string, std::string> cases[] = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"}};
  for (const auto& [text, hex] : cases) {
    Md5 whole;
    whole.update(text);
    CHECK(Md5::hex(whole.digest()) == hex);
    Md5 pieces;
    for (size_t i = 0; i < text.size(); i += 7) pieces.update(std::string_view(text).substr(i, 7));
    CHECK(Md5::hex(pieces.digest()) == hex);
  }
}

TEST_CASE("s3 credentials: the key variables, else AWS_PROFILE's section of the files") {
  std::string dir = std::string(SPROF_BINARY_DIR) + "/s3-config-test";
  std::system(("mkdir -p " + dir).c_str());
  {
    std::ofstream c(dir + "/credentials");
    c << "[default]\naws_access_key_id = AKDEF\naws_secret_access_key = SKDEF\n[ci]\naws_access_key_id=AKCI\n"
         "aws_secret_access_key=SKCI\naws_session_token = TOK\n";
    std::ofstream f(dir + "/config");
    f << "[profile ci]\nregion = eu-west-3\ns3 =\n  addressing_style = path\n";
  }
  setenv("AWS_SHARED_CREDENTIALS_FILE", (dir + "/credentials").c_str(), 1);
  setenv("AWS_CONFIG_FILE", (dir + "/config").c_str(), 1);
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"}) {
    unsetenv(v);
  }
  setenv("AWS_PROFILE", "ci", 1);
  auto c = resolve_s3_config(S3Options{});
  REQUIRE(c.ok());
  CHECK(c->credentials.access_key == "AKCI");
  CHECK(c->credentials.session_token == "TOK");
  CHECK(c->region == "eu-west-3");
  CHECK(c->endpoint == "https://s3.eu-west-3.amazonaws.com");
  CHECK(c->path_style);  // the config's nested s3.addressing_style
  CHECK(c->credentials.source.find("SKCI") == std::string::npos);
  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  unsetenv("AWS_PROFILE");
  auto e = resolve_s3_config(S3Options{"http://127.0.0.1:9000/", "", "", 4, 8, 60, {}, false});
  REQUIRE(e.ok());
  CHECK(e->credentials.access_key == "AKENV");
  CHECK(e->credentials.source == "environment");
  CHECK(e->endpoint == "http://127.0.0.1:9000");
  CHECK(e->region == "us-east-1");
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  setenv("AWS_PROFILE", "nobody", 1);
  auto none = resolve_s3_config(S3Options{});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message.find("no AWS credentials") != std::string::npos);
  for (const char* v : {"AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"}) unsetenv(v);
}

TEST_CASE("step skew: ranks by either node-id spelling, the straggler and the slowest node") {
  std::vector<report::StepRecord> steps;
  auto add = [&](const std::string& node, double seconds, int n, const std::string& mode = "TRAIN") {
    for (int i = 0; i < n; ++i) {
      report::StepRecord s;
      s.node = node;
      s.mode = mode;
      s.start_us = i * 10'000'000;
      s.end_us = s.start_us + int64_t(seconds * 1e6);
      steps.push_back(s);
    }
  };
  add("algo-1-100", 1.0, 5);
  add("algo-1-101", 1.1, 5);
  add("algo-2-100", 1.5, 5);
  add("algo-2-100", 9.0, 2, "EVAL");
  auto skew = report::step_skew(steps, {{"100-algo-1", "0"}, {"101-algo-1", "1"}, {"100-algo-2", "2"}});
  REQUIRE(skew);
  CHECK(skew->mode == "TRAIN");
  REQUIRE(skew->ranks.size() == 3);
  CHECK(skew->ranks[0].rank == "0");
  CHECK(skew->ranks[2].rank == "2");
  CHECK(skew->ranks[2].host == "algo-2");
  CHECK(skew->straggler == "algo-2-100");
  CHECK(skew->straggler_node == "algo-2");
  CHECK(skew->skew == Approx(0.5));
  REQUIRE(skew->nodes.size() == 2);
  CHECK(skew->nodes[0].ranks == 2);
  // One process: nothing to compare.
  CHECK_FALSE(report::step_skew({steps[0], steps[1]}, {}));
}

TEST_CASE("a role's credentials: expiration times, and fetched again only near expiry", "[s3]") {
  using sprof::remote::ExpiringCredentials;
  using sprof::remote::RoleCredentials;
  CHECK(sprof::remote::parse_expiration("2026-11-25T23:00:00Z") == 1795647600);
  CHECK(sprof::remote::parse_expiration("1970-01-01T00:01:40Z") == 100);
  CHECK_FALSE(sprof::remote::parse_expiration("tomorrow"));
  int fetches = 0;
  auto fetch = [&fetches]() -> sprof::Result<ExpiringCredentials> {
    ++fetches;
    ExpiringCredentials c;
    c.credentials.access_key = "key" + std::to_string(fetches);
    c.expires_epoch_s = int64_t(::time(nullptr)) + 3600;
    return c;
  };
  ExpiringCredentials far;
  far.credentials.access_key = "first";
  far.expires_epoch_s = int64_t(::time(nullptr)) + 3600;
  RoleCredentials lasting(fetch, far);
  CHECK(lasting.current().access_key == "first");
  CHECK(fetches == 0);
  ExpiringCredentials near = far;
  near.expires_epoch_s = int64_t(::time(nullptr)) + 60;  // within the five minutes
  RoleCredentials expiring(fetch, near);
  CHECK(expiring.current().access_key == "key1");
  CHECK(expiring.current().access_key == "key1");  // the new ones last an hour
  CHECK(fetches == 1);
  // A failed fetch keeps the old credentials.
  RoleCredentials failing([]() -> sprof::Result<ExpiringCredentials> {
    return sprof::make_error(sprof::ErrorKind::io, "metadata service down");
  }, near);
  CHECK(failing.current().access_key == "first");
}
