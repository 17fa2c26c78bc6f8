// S3's operations over HttpClient: ListObjectsV2, HEAD, GET into files, PUT and multipart upload.

#include <unistd.h>

#include <atomic>
#include <set>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "remote/progress.hpp"
#include "remote/s3_http.hpp"
#include "sprof/s3.hpp"

namespace fs = std::filesystem;

namespace sprof::remote {

struct S3Client::Impl {
  std::mutex stats_mutex;
  TransferStats stats;
};

S3Client::S3Client(S3Config config) : config_(std::move(config)), impl_(std::make_unique<Impl>()) {
  // A testing knob: multipart uploads of small files (S3's minimum part is 5 MiB but for the last).
  if (const char* t = std::getenv("SPROF_S3_MULTIPART_THRESHOLD"); t != nullptr && std::atoll(t) > 0) {
    multipart_threshold = uint64_t(std::atoll(t));
    part_size = std::max<uint64_t>(multipart_threshold, 1);
  }
  // Another: listings in small pages (S3's default and maximum is 1000 keys a page).
  if (const char* p = std::getenv("SPROF_S3_PAGE_SIZE"); p != nullptr && std::atoi(p) > 0) page_size_ = std::atoi(p);
}
S3Client::~S3Client() = default;

TransferStats S3Client::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats;
}

namespace {

// 100,000 pages of 1,000 keys: far beyond any profile.
constexpr int kMaxListPages = 100'000;

std::string unquote(std::string etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

}  // namespace

ListPage parse_list_page(std::string_view xml) {
  ListPage page;
  for (std::string_view contents : xml_elements(xml, "Contents")) {
    ObjectInfo o;
    o.key = xml_value(contents, "Key");
    o.etag = unquote(xml_value(contents, "ETag"));
    std::string size = xml_value(contents, "Size");
    o.size = size.empty() ? 0 : std::strtoull(size.c_str(), nullptr, 10);
    page.objects.push_back(std::move(o));
  }
  page.truncated = xml_value(xml, "IsTruncated") == "true";
  page.next_token = xml_value(xml, "NextContinuationToken");
  return page;
}

Result<std::vector<ObjectInfo>> S3Client::list(const std::string& bucket, const std::string& prefix) {
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  std::vector<ObjectInfo> out;
  std::string token;
  std::set<std::string> tokens_seen;
  for (int page = 0;; ++page) {
    // A server that hands back a token it gave before would page forever.
    if (page >= kMaxListPages) {
      return make_error(ErrorKind::io, "s3://{}/{}: the listing goes on past {} pages: stopped", bucket, prefix, kMaxListPages);
    }
    HttpRequest r;
    r.bucket = bucket;
    r.query = {{"list-type", "2"}, {"prefix", prefix}};
    if (page_size_ > 0) r.query.emplace_back("max-keys", std::to_string(page_size_));
    if (!token.empty()) r.query.emplace_back("continuation-token", token);
    SPROF_TRY(HttpResponse response, http.perform(r));
    ListPage listed = parse_list_page(response.body);
    std::move(listed.objects.begin(), listed.objects.end(), std::back_inserter(out));
    if (!listed.truncated) break;
    token = std::move(listed.next_token);
    if (token.empty()) {
      return make_error(ErrorKind::io, "s3://{}/{}: the listing is truncated but has no continuation token", bucket,
                        prefix);
    }
    if (!tokens_seen.insert(token).second) {
      return make_error(ErrorKind::io, "s3://{}/{}: the server repeated a continuation token (page {}): the listing "
                        "would never end", bucket, prefix, page + 1);
    }
  }
  return out;
}

Result<ObjectInfo> S3Client::head(const std::string& bucket, const std::string& key) {
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  HttpRequest r;
  r.method = "HEAD";
  r.bucket = bucket;
  r.key = key;
  SPROF_TRY(HttpResponse response, http.perform(r));
  ObjectInfo o;
  o.key = key;
  o.etag = unquote(response.headers["etag"]);
  o.size = std::strtoull(response.headers["content-length"].c_str(), nullptr, 10);
  return o;
}

namespace {

Status get_one(HttpClient& http, const std::string& bucket, const std::string& key, const fs::path& path,
               std::optional<uint64_t> expected_size) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", path.parent_path().string(), ec.message());
  static std::atomic<uint64_t> counter{0};
  fs::path temporary = path;
  temporary += fmt::format(".part{}-{}", ::getpid(), counter.fetch_add(1));
  FILE* f = std::fopen(temporary.c_str(), "w+b");
  if (f == nullptr) return make_error(ErrorKind::io, "cannot write {}: {}", temporary.string(), std::strerror(errno));
  HttpRequest r;
  r.bucket = bucket;
  r.key = key;
  r.sink = f;
  r.max_sink_bytes = expected_size;
  auto response = http.perform(r);
  long length = response.ok() ? std::ftell(f) : 0;
  bool closed = std::fclose(f) == 0;
  if (!response.ok() || !closed) {
    fs::remove(temporary, ec);
    if (!response.ok()) return std::move(response).error();
    return make_error(ErrorKind::io, "cannot write {}", temporary.string());
  }
  if (expected_size && uint64_t(length) != *expected_size) {
    fs::remove(temporary, ec);
    return make_error(ErrorKind::io, "s3://{}/{}: got {} bytes, the listing said {}", bucket, key, length,
                      *expected_size);
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return make_error(ErrorKind::io, "cannot write {}: {}", path.string(), ec.message());
  }
  return {};
}

}  // namespace

Status S3Client::get_to_file(const std::string& bucket, const std::string& key, const fs::path& path,
                             std::optional<uint64_t> expected_size) {
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  return get_one(http, bucket, key, path, expected_size);
}

Status S3Client::get_many(const std::string& bucket, const std::vector<Download>& downloads) {
  if (downloads.empty()) return {};
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::optional<Error> first_error;
  ProgressLine progress(config_.options.progress, "downloading");
  size_t done = 0;
  uint64_t bytes = 0;
  auto worker = [&] {
    HttpClient http(config_, impl_->stats, impl_->stats_mutex);
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= downloads.size()) return;
      const Download& d = downloads[i];
      Status s = get_one(http, bucket, d.key, d.path, d.size);
      std::lock_guard lock(error_mutex);
      if (!s.ok() && !first_error) first_error = s.error();
      ++done;
      bytes += d.size.value_or(0);
      progress.update(done, downloads.size(), bytes);
    }
  };
  size_t n = std::min<size_t>(size_t(config_.options.parallel), downloads.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (first_error) return *first_error;
  return {};
}

Result<ObjectInfo> S3Client::put_bytes(const std::string& bucket, const std::string& key, std::string_view bytes) {
  if (!is_safe_key(key)) return make_error(ErrorKind::usage, "s3://{}/{}: not a key sprof writes", bucket, key);
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  HttpRequest r;
  r.method = "PUT";
  r.bucket = bucket;
  r.key = key;
  r.body = bytes;
  SPROF_TRY(HttpResponse response, http.perform(r));
  return ObjectInfo{key, bytes.size(), unquote(response.headers["etag"])};
}

Result<ObjectInfo> S3Client::put_range(const std::string& bucket, const std::string& key, const fs::path& path,
                                       uint64_t offset, uint64_t length) {
  if (!is_safe_key(key)) return make_error(ErrorKind::usage, "s3://{}/{}: not a key sprof writes", bucket, key);
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  HttpRequest r;
  r.method = "PUT";
  r.bucket = bucket;
  r.key = key;
  r.body_file = &path;
  r.body_offset = offset;
  r.body_length = length;
  SPROF_TRY(HttpResponse response, http.perform(r));
  return ObjectInfo{key, length, unquote(response.headers["etag"])};
}

Status S3Client::remove(const std::string& bucket, const std::string& key) {
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  HttpRequest r;
  r.method = "DELETE";
  r.bucket = bucket;
  r.key = key;
  SPROF_TRY(HttpResponse response, http.perform(r));
  return {};
}

Result<ObjectInfo> S3Client::put_file(const std::string& bucket, const std::string& key, const fs::path& path) {
  if (!is_safe_key(key)) return make_error(ErrorKind::usage, "s3://{}/{}: not a key sprof writes", bucket, key);
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) return make_error(ErrorKind::io, "cannot read {}: {}", path.string(), ec.message());
  HttpClient http(config_, impl_->stats, impl_->stats_mutex);
  if (size <= multipart_threshold) {
    HttpRequest r;
    r.method = "PUT";
    r.bucket = bucket;
    r.key = key;
    r.body_file = &path;
    r.body_length = size;
    SPROF_TRY(HttpResponse response, http.perform(r));
    return ObjectInfo{key, size, unquote(response.headers["etag"])};
  }
  // Multipart: create, upload the parts, complete; abort on any failure so no parts linger.
  HttpRequest create;
  create.method = "POST";
  create.bucket = bucket;
  create.key = key;
  create.query = {{"uploads", ""}};
  SPROF_TRY(HttpResponse created, http.perform(create));
  std::string upload_id = xml_value(created.body, "UploadId");
  if (upload_id.empty()) return make_error(ErrorKind::io, "s3://{}/{}: no UploadId in the answer", bucket, key);
  std::string complete = "<CompleteMultipartUpload>";
  Status failed;
  uint64_t parts = (size + part_size - 1) / part_size;
  for (uint64_t part = 0; part < parts && failed.ok(); ++part) {
    HttpRequest r;
    r.method = "PUT";
    r.bucket = bucket;
    r.key = key;
    r.query = {{"partNumber", std::to_string(part + 1)}, {"uploadId", upload_id}};
    r.body_file = &path;
    r.body_offset = part * part_size;
    r.body_length = std::min(part_size, size - r.body_offset);
    auto response = http.perform(r);
    if (!response.ok()) {
      failed = std::move(response).error();
      break;
    }
    complete += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", part + 1,
                            response->headers["etag"]);
  }
  complete += "</CompleteMultipartUpload>";
  if (failed.ok()) {
    HttpRequest r;
    r.method = "POST";
    r.bucket = bucket;
    r.key = key;
    r.query = {{"uploadId", upload_id}};
    r.body = complete;
    auto response = http.perform(r);
    if (response.ok()) {
      // S3 can answer 200 with an error document when completing fails late.
      std::string code = xml_value(response->body, "Code");
      if (code.empty()) return ObjectInfo{key, size, unquote(xml_value(response->body, "ETag"))};
      failed = make_error(ErrorKind::io, "s3://{}/{}: completing the upload failed ({}: {})", bucket, key, code,
                          xml_value(response->body, "Message"));
    } else {
      failed = std::move(response).error();
    }
  }
  HttpRequest abort;
  abort.method = "DELETE";
  abort.bucket = bucket;
  abort.key = key;
  abort.query = {{"uploadId", upload_id}};
  (void)http.perform(abort);
  return failed.error();
}

}  // namespace sprof::remote
