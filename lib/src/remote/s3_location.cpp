// s3://bucket/prefix URLs and the keys sprof accepts.

#include <fmt/format.h>

#include "sprof/s3.hpp"

namespace sprof::remote {

bool is_s3_url(std::string_view text) { return text.starts_with(kS3Scheme); }

std::string S3Location::url() const {
  return prefix.empty() ? fmt::format("s3://{}", bucket) : fmt::format("s3://{}/{}", bucket, prefix);
}

bool is_safe_key(std::string_view key) {
  if (key.empty() || key.front() == '/') return false;
  size_t pos = 0;
  while (pos <= key.size()) {
    size_t slash = key.find('/', pos);
    std::string_view segment = key.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    // A trailing '/' (a "folder" object) is an empty last segment: not a file sprof reads.
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

Result<S3Location> parse_s3_url(std::string_view url) {
  if (!is_s3_url(url)) return make_error(ErrorKind::usage, "{}: not an s3://bucket/prefix URL", url);
  std::string_view rest = url.substr(kS3Scheme.size());
  size_t slash = rest.find('/');
  S3Location loc;
  loc.bucket = std::string(rest.substr(0, slash));
  std::string_view prefix = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  loc.prefix = std::string(prefix);
  // S3's bucket naming rules: 3-63 characters of lower-case letters, digits, '.' and '-'.
  bool bucket_ok = loc.bucket.size() >= 3 && loc.bucket.size() <= 63;
  for (char c : loc.bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) bucket_ok = false;
  }
  if (!bucket_ok) return make_error(ErrorKind::usage, "{}: '{}' is not a valid bucket name", url, loc.bucket);
  if (!loc.prefix.empty() && !is_safe_key(loc.prefix)) {
    return make_error(ErrorKind::usage, "{}: the prefix may not hold empty, '.' or '..' segments or control bytes", url);
  }
  return loc;
}

}  // namespace sprof::remote
