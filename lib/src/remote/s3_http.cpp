#include "remote/s3_http.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "remote/curl_library.hpp"

namespace sprof::remote {
namespace {

// SigV4's hash of an empty payload.
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

size_t write_string(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t write_file(char* data, size_t size, size_t n, void* user) {
  return std::fwrite(data, size, n, static_cast<FILE*>(user)) * size;
}

size_t header_line(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string_view line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    (*headers)[name] = std::string(value);
  }
  return size * n;
}

struct ReadState {
  std::string_view bytes;
  FILE* file = nullptr;
  uint64_t left = 0;
};

size_t read_body(char* buffer, size_t size, size_t n, void* user) {
  auto* s = static_cast<ReadState*>(user);
  size_t want = std::min<uint64_t>(size * n, s->left);
  if (s->file != nullptr) {
    size_t got = std::fread(buffer, 1, want, s->file);
    s->left -= got;
    return got;
  }
  std::memcpy(buffer, s->bytes.data(), want);
  s->bytes.remove_prefix(want);
  s->left -= want;
  return want;
}

bool retryable(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::string where(const HttpRequest& r) {
  return r.key.empty() ? fmt::format("s3://{}", r.bucket) : fmt::format("s3://{}/{}", r.bucket, r.key);
}

}  // namespace

std::string uri_encode(std::string_view text, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                 c == '_' || c == '~' || (keep_slash && c == '/');
    if (plain) {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string xml_unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    size_t semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += text[i];
      continue;
    }
    std::string_view entity = text.substr(i + 1, semi - i - 1);
    uint32_t code = 0;
    bool known = true;
    if (entity == "amp") code = '&';
    else if (entity == "lt") code = '<';
    else if (entity == "gt") code = '>';
    else if (entity == "quot") code = '"';
    else if (entity == "apos") code = '\'';
    else if (entity.size() > 1 && entity[0] == '#') {
      bool is_hex = entity[1] == 'x' || entity[1] == 'X';
      std::string digits(entity.substr(is_hex ? 2 : 1));
      char* end = nullptr;
      code = static_cast<uint32_t>(std::strtoul(digits.c_str(), &end, is_hex ? 16 : 10));
      known = !digits.empty() && end != nullptr && *end == '\0' && code <= 0x10FFFF;
    } else {
      known = false;
    }
    if (!known) {
      out += text[i];
      continue;
    }
    // UTF-8 encoding of the code point.
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xC0 | (code >> 6));
      out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += char(0xE0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    } else {
      out += char(0xF0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3F));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    }
    i = semi;
  }
  return out;
}

std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  std::string open = fmt::format("<{}>", tag);
  std::string close = fmt::format("</{}>", tag);
  size_t pos = 0;
  for (;;) {
    size_t b = xml.find(open, pos);
    if (b == std::string_view::npos) break;
    b += open.size();
    size_t e = xml.find(close, b);
    if (e == std::string_view::npos) break;
    out.push_back(xml.substr(b, e - b));
    pos = e + close.size();
  }
  return out;
}

std::string xml_value(std::string_view xml, std::string_view tag, size_t from) {
  std::string open = fmt::format("<{}>", tag);
  std::string close = fmt::format("</{}>", tag);
  size_t b = xml.find(open, from);
  if (b == std::string_view::npos) return {};
  b += open.size();
  size_t e = xml.find(close, b);
  if (e == std::string_view::npos) return {};
  return xml_unescape(xml.substr(b, e - b));
}

HttpClient::HttpClient(const S3Config& config, TransferStats& stats, std::mutex& stats_mutex)
    : config_(config), stats_(stats), stats_mutex_(stats_mutex) {
  auto library = curl_library();
  if (!library.ok()) {
    load_error_ = library.error().message;
    return;
  }
  api_ = *library;
  curl_ = api_->easy_init();
}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) api_->easy_cleanup(static_cast<CURL*>(curl_));
}

std::string HttpClient::url(const HttpRequest& r) const {
  std::string u;
  if (config_.path_style) {
    u = fmt::format("{}/{}", config_.endpoint, r.bucket);
    if (!r.key.empty()) u += "/" + uri_encode(r.key, true);
  } else {
    size_t scheme = config_.endpoint.find("://") + 3;
    u = fmt::format("{}{}.{}/{}", config_.endpoint.substr(0, scheme), r.bucket, config_.endpoint.substr(scheme),
                    uri_encode(r.key, true));
  }
  auto query = r.query;
  std::sort(query.begin(), query.end());
  for (size_t i = 0; i < query.size(); ++i) {
    u += i == 0 ? '?' : '&';
    u += uri_encode(query[i].first, false) + "=" + uri_encode(query[i].second, false);
  }
  return u;
}

Result<HttpResponse> HttpClient::perform(const HttpRequest& r) {
  if (!load_error_.empty()) return make_error(ErrorKind::runtime, "{}: {}", where(r), load_error_);
  auto* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return make_error(ErrorKind::runtime, "{}: cannot start libcurl", where(r));
  const CurlLibrary& api = *api_;
  const std::string target = url(r);
  const bool has_body = r.body_file != nullptr || !r.body.empty() || r.method == "PUT";
  std::mt19937_64 rng(std::random_device{}());
  const int attempts = 1 + config_.options.retries;
  std::string last_problem;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) {
      // Exponential backoff with full jitter: uniform in [0, min(10 s, 0.2 s * 2^attempt)].
      double cap = std::min(10.0, 0.2 * double(1 << std::min(attempt, 10)));
      std::uniform_real_distribution<double> wait(0.0, cap);
      double s = wait(rng);
      spdlog::debug("{}: {}; retry {} of {} in {:.2f} s", where(r), last_problem, attempt, attempts - 1, s);
      std::this_thread::sleep_for(std::chrono::duration<double>(s));
      std::lock_guard lock(stats_mutex_);
      ++stats_.retries;
    }
    api.easy_reset(curl);
    HttpResponse response;
    api.easy_setopt(curl, CURLOPT_URL, target.c_str());
    api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    // A transfer that moves less than a byte a second for timeout_s fails (and is retried).
    api.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    api.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(config_.options.timeout_s)));
    std::string sigv4 = fmt::format("aws:amz:{}:s3", config_.region);
    api.easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    const Credentials credentials = config_.current_credentials();  // a role's are fetched again as they expire
    api.easy_setopt(curl, CURLOPT_USERNAME, credentials.access_key.c_str());
    api.easy_setopt(curl, CURLOPT_PASSWORD, credentials.secret_key.c_str());
    curl_slist* headers = nullptr;
    std::string payload = fmt::format("x-amz-content-sha256: {}", has_body ? "UNSIGNED-PAYLOAD" : kEmptySha256);
    headers = api.slist_append(headers, payload.c_str());
    std::string token;
    if (!credentials.session_token.empty()) {
      token = "x-amz-security-token: " + credentials.session_token;
      headers = api.slist_append(headers, token.c_str());
    }
    api.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    api.easy_setopt(curl, CURLOPT_HEADERFUNCTION, header_line);
    api.easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
    ReadState read_state;
    if (r.method == "HEAD") {
      api.easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (r.method == "PUT") {
      read_state.left = r.body_file != nullptr ? r.body_length : r.body.size();
      read_state.bytes = r.body;
      if (r.body_file != nullptr) {
        read_state.file = std::fopen(r.body_file->c_str(), "rb");
        if (read_state.file == nullptr) {
          api.slist_free_all(headers);
          return make_error(ErrorKind::io, "cannot read {}: {}", r.body_file->string(), std::strerror(errno));
        }
        std::fseek(read_state.file, long(r.body_offset), SEEK_SET);
      }
      api.easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      api.easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
      api.easy_setopt(curl, CURLOPT_READDATA, &read_state);
      api.easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, curl_off_t(read_state.left));
    } else if (r.method == "POST") {
      api.easy_setopt(curl, CURLOPT_POST, 1L);
      api.easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
      api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(r.body.size()));
    } else if (r.method != "GET") {
      api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    if (r.sink != nullptr) {
      std::rewind(r.sink);
      (void)!ftruncate(fileno(r.sink), 0);
    }
    // The body goes to the sink only on success; an error's XML is kept to be read. A server
    // cannot make sprof store more than it said: a download stops past its listed size, an
    // error's body past 64 KiB (the rest is not needed), any other reply past 256 MiB.
    struct SinkChoice {
      FILE* sink;
      std::string* text;
      long status = 0;
      CURL* curl;
      const CurlLibrary* api;
      std::optional<uint64_t> max_sink;
      uint64_t sunk = 0;
      bool too_long = false;      // stopped: an error
      bool error_cut = false;     // stopped reading an error's body: its status still counts
    } choice{r.sink, &response.body, 0, curl, &api, r.max_sink_bytes};
    auto write = +[](char* data, size_t size, size_t n, void* user) -> size_t {
      auto* c = static_cast<SinkChoice*>(user);
      if (c->status == 0) c->api->easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->status);
      const size_t bytes = size * n;
      if (c->sink != nullptr && c->status >= 200 && c->status < 300) {
        c->sunk += bytes;
        if (c->max_sink && c->sunk > *c->max_sink) {
          c->too_long = true;
          return 0;
        }
        return write_file(data, size, n, c->sink);
      }
      const bool error = c->status >= 300;
      const size_t cap = error ? size_t(64) << 10 : size_t(256) << 20;
      if (c->text->size() + bytes > cap) {
        c->text->append(data, cap - std::min(cap, c->text->size()));
        (error ? c->error_cut : c->too_long) = true;
        return 0;
      }
      return write_string(data, size, n, c->text);
    };
    api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, write);
    api.easy_setopt(curl, CURLOPT_WRITEDATA, &choice);
    spdlog::trace("{} {}", r.method, target);
    CURLcode code = api.easy_perform(curl);
    api.slist_free_all(headers);
    if (read_state.file != nullptr) std::fclose(read_state.file);
    api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    {
      std::lock_guard lock(stats_mutex_);
      ++stats_.requests;
      curl_off_t down = 0, up = 0;
      api.easy_getinfo(curl, CURLINFO_SIZE_DOWNLOAD_T, &down);
      api.easy_getinfo(curl, CURLINFO_SIZE_UPLOAD_T, &up);
      stats_.bytes_down += uint64_t(std::max<curl_off_t>(down, 0));
      stats_.bytes_up += uint64_t(std::max<curl_off_t>(up, 0));
    }
    if (choice.too_long) {
      return make_error(ErrorKind::io, "{}: the server sent more than {}: stopped", where(r),
                        r.max_sink_bytes && r.sink != nullptr ? fmt::format("the {} bytes it listed", *r.max_sink_bytes)
                                                              : std::string("256 MiB"));
    }
    if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && choice.error_cut)) {
      last_problem = api.easy_strerror(code);
      if (retryable(code)) continue;
      return make_error(ErrorKind::io, "{}: {}", where(r), last_problem);
    }
    if (r.sink != nullptr && std::fflush(r.sink) != 0) {
      return make_error(ErrorKind::io, "{}: cannot write the download: {}", where(r), std::strerror(errno));
    }
    long s = response.status;
    if (s >= 200 && s < 300) return response;
    std::string code_text = xml_value(response.body, "Code");
    std::string message = xml_value(response.body, "Message");
    std::string detail = fmt::format("{}{}{}", s, code_text.empty() ? "" : " " + code_text,
                                     message.empty() ? "" : ": " + message);
    last_problem = "HTTP " + detail;
    if (s >= 500 || s == 429 || code_text == "RequestTimeout" || code_text == "SlowDown") continue;
    if (s == 403) return make_error(ErrorKind::permission, "{}: access denied ({})", where(r), detail);
    if (s == 404) {
      // A bucket that is not there is a wrong argument, as a missing directory is (status 2).
      if (code_text == "NoSuchBucket") {
        return make_error(ErrorKind::bad_input, "s3://{}: no such bucket ({})", r.bucket, detail);
      }
      return make_error(ErrorKind::io, "{}: no such key ({})", where(r), r.method == "HEAD" ? "404" : detail);
    }
    return make_error(ErrorKind::io, "{}: {} failed ({})", where(r), r.method, detail);
  }
  return make_error(ErrorKind::io, "{}: {} failed after {} attempts: {}", where(r), r.method, attempts, last_problem);
}

}  // namespace sprof::remote
