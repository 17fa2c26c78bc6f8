#pragma once
// One signed S3 request over a libcurl easy handle, retried on transient failures. The URL is
// built in the canonical form SigV4 signs (curl 7.88 signs the path and query exactly as
// written): keys percent-encoded with upper-case hex except A-Z a-z 0-9 - . _ ~ and '/', query
// parameters sorted by name with '/' encoded too and '=' after valueless ones.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sprof/result.hpp"
#include "sprof/s3.hpp"

namespace sprof::remote {

struct CurlLibrary;

std::string uri_encode(std::string_view text, bool keep_slash);
std::string xml_unescape(std::string_view text);
// The text of the first <tag>...</tag> in `xml` at or after `from` (unescaped), "" if none.
std::string xml_value(std::string_view xml, std::string_view tag, size_t from = 0);
// Each <tag>...</tag> element's inner text (raw).
std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag);

struct HttpRequest {
  std::string method = "GET";
  std::string bucket;
  std::string key;                                          // "" for bucket-level requests
  std::vector<std::pair<std::string, std::string>> query;   // raw values
  std::string_view body;                                    // in-memory body (PUT, POST)
  const std::filesystem::path* body_file = nullptr;         // or a file range
  uint64_t body_offset = 0;
  uint64_t body_length = 0;
  FILE* sink = nullptr;                                     // GET body into this file (rewound on retry)
  std::optional<uint64_t> max_sink_bytes;                   // a longer body is an error, never written
};

struct HttpResponse {
  long status = 0;
  std::string body;                            // unless a sink took it
  std::map<std::string, std::string> headers;  // lower-case names
};

class HttpClient {
 public:
  HttpClient(const S3Config& config, TransferStats& stats, std::mutex& stats_mutex);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Performs with retries. A response that is not 2xx after the retries is an error naming
  // s3://bucket/key: 403 permission, 404 and the rest io; a transport failure io.
  Result<HttpResponse> perform(const HttpRequest& request);

 private:
  std::string url(const HttpRequest& request) const;
  const S3Config& config_;
  TransferStats& stats_;
  std::mutex& stats_mutex_;
  const CurlLibrary* api_ = nullptr;
  std::string load_error_;  // libcurl could not be loaded: every request fails with it
  void* curl_ = nullptr;
};

}  // namespace sprof::remote
