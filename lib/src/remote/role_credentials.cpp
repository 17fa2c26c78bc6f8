// Credentials of a container's or an EC2 instance's role (role_credentials.hpp).

#include "remote/role_credentials.hpp"

#include <time.h>

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "remote/curl_library.hpp"

namespace sprof::remote {
namespace {

constexpr int64_t kRefreshBeforeS = 300;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

int64_t now_s() { return int64_t(::time(nullptr)); }

size_t collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

struct Reply {
  long status = 0;
  std::string body;
};

// One small request to a link-local credentials endpoint: short timeouts, as the AWS CLI's
// (an address that does not answer, off EC2, costs a second).
Result<Reply> call(const char* method, const std::string& url, const std::vector<std::string>& headers) {
  SPROF_TRY(const CurlLibrary* library, curl_library());
  const CurlLibrary& api = *library;
  CURL* curl = api.easy_init();
  if (curl == nullptr) return make_error(ErrorKind::io, "no curl handle");
  Reply reply;
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = api.slist_append(list, h.c_str());
  api.easy_setopt(curl, CURLOPT_URL, url.c_str());
  api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
  api.easy_setopt(curl, CURLOPT_TIMEOUT_MS, 3000L);
  api.easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  CURLcode rc = api.easy_perform(curl);
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  api.slist_free_all(list);
  api.easy_cleanup(curl);
  if (rc != CURLE_OK) return make_error(ErrorKind::io, "{} {}: {}", method, url, api.easy_strerror(rc));
  if (reply.status < 200 || reply.status > 299) {
    return make_error(ErrorKind::permission, "{} {}: HTTP {}", method, url, reply.status);
  }
  return reply;
}

// {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"} (IMDS adds "Code": "Success").
Result<ExpiringCredentials> parse_credentials(const std::string& body, const std::string& source) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("AccessKeyId") || !doc.contains("SecretAccessKey") ||
      !doc["AccessKeyId"].is_string() || !doc["SecretAccessKey"].is_string()) {
    return make_error(ErrorKind::permission, "{}: the answer holds no AccessKeyId and SecretAccessKey", source);
  }
  if (doc.contains("Code") && doc["Code"] != "Success") {
    return make_error(ErrorKind::permission, "{}: {}", source, doc["Code"].dump());
  }
  ExpiringCredentials c;
  c.credentials.access_key = doc["AccessKeyId"].get<std::string>();
  c.credentials.secret_key = doc["SecretAccessKey"].get<std::string>();
  if (doc.contains("Token") && doc["Token"].is_string()) c.credentials.session_token = doc["Token"].get<std::string>();
  c.credentials.source = source;
  if (doc.contains("Expiration") && doc["Expiration"].is_string()) {
    auto expires = parse_expiration(doc["Expiration"].get<std::string>());
    if (!expires) return make_error(ErrorKind::permission, "{}: Expiration {} is not a time", source, doc["Expiration"].dump());
    c.expires_epoch_s = *expires;
  }
  return c;
}

}  // namespace

std::optional<int64_t> parse_expiration(std::string_view text) {
  std::tm tm{};
  std::istringstream in{std::string(text)};
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return int64_t(::timegm(&tm));
}

RoleCredentials::RoleCredentials(Fetch fetch, ExpiringCredentials first) : fetch_(std::move(fetch)), now_(std::move(first)) {}

Credentials RoleCredentials::current() {
  std::lock_guard lock(mutex_);
  if (now_.expires_epoch_s == 0 || now_s() < now_.expires_epoch_s - kRefreshBeforeS) return now_.credentials;
  auto fresh = fetch_();
  if (fresh.ok()) {
    now_ = std::move(fresh).value();
    warned_ = false;
    spdlog::debug("AWS credentials from {} fetched again", now_.credentials.source);
  } else if (!warned_) {
    warned_ = true;
    spdlog::warn("AWS credentials from {} expire soon and could not be fetched again: {}", now_.credentials.source,
                 fresh.error().message);
  }
  return now_.credentials;
}

std::optional<RoleCredentials::Fetch> container_credentials() {
  std::string url;
  if (!env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").empty()) {
    url = "http://169.254.170.2" + env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  } else if (!env("AWS_CONTAINER_CREDENTIALS_FULL_URI").empty()) {
    url = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  } else {
    return std::nullopt;
  }
  return RoleCredentials::Fetch([url]() -> Result<ExpiringCredentials> {
    std::vector<std::string> headers;
    std::string token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    std::string token_file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (!token_file.empty()) {
      std::ifstream in(token_file);
      std::getline(in, token);
      if (!in && token.empty()) {
        return make_error(ErrorKind::permission, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {} cannot be read", token_file);
      }
    }
    if (!token.empty()) headers.push_back("Authorization: " + token);
    SPROF_TRY(Reply reply, call("GET", url, headers));
    return parse_credentials(reply.body, "the container's role (" + url + ")");
  });
}

std::optional<RoleCredentials::Fetch> instance_credentials() {
  std::string disabled = env("AWS_EC2_METADATA_DISABLED");
  for (char& ch : disabled) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (disabled == "true") return std::nullopt;
  std::string endpoint = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (endpoint.empty()) endpoint = "http://169.254.169.254";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return RoleCredentials::Fetch([endpoint]() -> Result<ExpiringCredentials> {
    // IMDSv2: a session token first, then the role's name and its credentials.
    SPROF_TRY(Reply token, call("PUT", endpoint + "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}));
    std::vector<std::string> headers{"X-aws-ec2-metadata-token: " + token.body};
    std::string base = endpoint + "/latest/meta-data/iam/security-credentials/";
    SPROF_TRY(Reply roles, call("GET", base, headers));
    std::string role = roles.body.substr(0, roles.body.find('\n'));
    while (!role.empty() && (role.back() == '\r' || role.back() == ' ')) role.pop_back();
    if (role.empty()) return make_error(ErrorKind::permission, "the EC2 instance ({}) has no IAM role", endpoint);
    SPROF_TRY(Reply creds, call("GET", base + role, headers));
    return parse_credentials(creds.body, fmt::format("the EC2 instance's role {} ({})", role, endpoint));
  });
}

Credentials S3Config::current_credentials() const { return role ? role->current() : credentials; }

}  // namespace sprof::remote
