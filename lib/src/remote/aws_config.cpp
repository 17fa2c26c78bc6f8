// Credentials, region and endpoint as the AWS CLI finds them: the environment first, then the
// shared credentials file, then the config file, for the profile AWS_PROFILE names.

#include <cstdlib>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "remote/role_credentials.hpp"
#include "sprof/s3.hpp"

namespace fs = std::filesystem;

namespace sprof::remote {
namespace {

using Section = std::map<std::string, std::string>;
using IniFile = std::map<std::string, Section>;

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

// The AWS files' INI dialect: [section], key = value, '#' and ';' comments. Nested settings
// (a key with an empty value followed by indented lines, as "s3 =") keep their indented lines
// as "parent.key" entries.
IniFile read_ini(const fs::path& path) {
  IniFile ini;
  std::ifstream in(path);
  std::string line, section, parent;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[' && t.back() == ']') {
      section = trim(std::string_view(t).substr(1, t.size() - 2));
      parent.clear();
      continue;
    }
    size_t eq = t.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(std::string_view(t).substr(0, eq));
    std::string value = trim(std::string_view(t).substr(eq + 1));
    bool indented = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (indented && !parent.empty()) {
      ini[section][parent + "." + key] = value;
      continue;
    }
    parent = value.empty() ? key : std::string();
    ini[section][key] = value;
  }
  return ini;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

fs::path home_file(const char* variable, const char* relative) {
  std::string over = env(variable);
  if (!over.empty()) return over;
  std::string home = env("HOME");
  return home.empty() ? fs::path() : fs::path(home) / relative;
}

const Section* find_section(const IniFile& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

std::string value_of(const Section* s, const std::string& key) {
  if (s == nullptr) return {};
  auto it = s->find(key);
  return it == s->end() ? std::string() : it->second;
}

}  // namespace

Result<S3Config> resolve_s3_config(const S3Options& options) {
  S3Config c;
  c.options = options;
  std::string profile = env("AWS_PROFILE");
  if (profile.empty()) profile = env("AWS_DEFAULT_PROFILE");
  bool named_profile = !profile.empty();
  if (profile.empty()) profile = "default";
  fs::path credentials_file = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  fs::path config_file = home_file("AWS_CONFIG_FILE", ".aws/config");
  IniFile creds_ini = credentials_file.empty() ? IniFile() : read_ini(credentials_file);
  IniFile config_ini = config_file.empty() ? IniFile() : read_ini(config_file);
  const Section* cred_section = find_section(creds_ini, profile);
  const Section* config_section =
      find_section(config_ini, profile == "default" ? std::string("default") : "profile " + profile);

  // As the AWS CLI: the key variables win over AWS_PROFILE's files.
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    c.credentials = {env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN"), "environment"};
  } else if (!value_of(cred_section, "aws_access_key_id").empty()) {
    c.credentials = {value_of(cred_section, "aws_access_key_id"), value_of(cred_section, "aws_secret_access_key"),
                     value_of(cred_section, "aws_session_token"),
                     fmt::format("{} [{}]", credentials_file.string(), profile)};
  } else if (!value_of(config_section, "aws_access_key_id").empty()) {
    c.credentials = {value_of(config_section, "aws_access_key_id"), value_of(config_section, "aws_secret_access_key"),
                     value_of(config_section, "aws_session_token"),
                     fmt::format("{} [{}]", config_file.string(), profile)};
  } else if (auto container = container_credentials()) {
    SPROF_TRY(ExpiringCredentials first, (*container)());
    c.credentials = first.credentials;
    c.role = std::make_shared<RoleCredentials>(std::move(*container), std::move(first));
  } else {
    std::string instance_problem = "AWS_EC2_METADATA_DISABLED is set";
    if (auto instance = instance_credentials()) {
      auto first = (*instance)();
      if (first.ok()) {
        c.credentials = first->credentials;
        c.role = std::make_shared<RoleCredentials>(std::move(*instance), std::move(first).value());
      } else {
        instance_problem = first.error().message;
      }
    }
    if (!c.role) {
      return make_error(ErrorKind::permission,
                        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or put profile '{}'{} in "
                        "{} or {}; no instance role either ({})",
                        profile, named_profile ? " (AWS_PROFILE)" : "", credentials_file.string(), config_file.string(),
                        instance_problem);
    }
  }
  if (c.credentials.secret_key.empty()) {
    return make_error(ErrorKind::permission, "AWS credentials from {} have an access key but no secret key",
                      c.credentials.source);
  }

  c.region = options.region;
  for (const char* v : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (c.region.empty()) c.region = env(v);
  }
  if (c.region.empty()) c.region = value_of(config_section, "region");
  if (c.region.empty()) c.region = "us-east-1";

  std::string endpoint = options.endpoint_url;
  for (const char* v : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (endpoint.empty()) endpoint = env(v);
  }
  if (endpoint.empty()) endpoint = value_of(config_section, "s3.endpoint_url");
  if (endpoint.empty()) endpoint = value_of(config_section, "endpoint_url");
  bool custom = !endpoint.empty();
  if (!custom) endpoint = fmt::format("https://s3.{}.amazonaws.com", c.region);
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://")) {
    return make_error(ErrorKind::usage, "endpoint URL '{}' must start with http:// or https://", endpoint);
  }
  c.endpoint = endpoint;
  std::string addressing = options.addressing;
  if (addressing.empty()) addressing = value_of(config_section, "s3.addressing_style");
  if (addressing.empty() || addressing == "auto") addressing = custom ? "path" : "virtual";
  if (addressing != "path" && addressing != "virtual") {
    return make_error(ErrorKind::usage, "S3 addressing style '{}': give path or virtual", addressing);
  }
  c.path_style = addressing == "path";
  if (c.options.retries < 0) c.options.retries = 0;
  if (c.options.parallel < 1) c.options.parallel = 1;
  return c;
}

}  // namespace sprof::remote
