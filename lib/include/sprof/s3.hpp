#pragma once
// Profiles on S3 (any S3-compatible store): an S3 client on libcurl (SigV4 by libcurl's
// CURLOPT_AWS_SIGV4, ListObjectsV2, GET into a cache with a bounded pool of parallel transfers,
// HEAD, PUT and multipart upload), credentials and region found as the AWS CLI finds them, a
// profile prefix mounted under store's readers (profile_files.hpp) so every command reads
// `s3://bucket/prefix` as it reads a directory, and uploads of a local profile.
//
// Faults: 5xx, 429, timeouts and broken connections are retried with exponential backoff and
// full jitter (`retries` attempts after the first); 403 and 404 are not: one error naming the
// bucket and key (ErrorKind::permission, ErrorKind::io). Credentials never appear in messages.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/launch.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"

namespace sprof::remote {

inline constexpr std::string_view kS3Scheme = "s3://";
bool is_s3_url(std::string_view text);

struct S3Location {
  std::string bucket;
  std::string prefix;  // without leading or trailing '/'; empty: the whole bucket
  std::string url() const;  // s3://bucket/prefix
};
// Usage errors name the URL: no bucket, a bad bucket name, '.', '..' or empty segments in the prefix.
Result<S3Location> parse_s3_url(std::string_view url);

// What keys sprof writes and reads: no empty, '.' or '..' segments, no control bytes, not absolute.
bool is_safe_key(std::string_view key);

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty: none
  std::string source;         // "environment", "~/.aws/credentials [default]", ... (never the keys)
};

// Flags that override what the environment and the AWS files say.
struct S3Options {
  std::string endpoint_url;  // --endpoint-url; else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the config file's endpoint_url
  std::string region;        // else AWS_REGION, AWS_DEFAULT_REGION, the config file's region, us-east-1
  std::string addressing;    // "path", "virtual" or "" (path for a custom endpoint, virtual for AWS)
  int retries = 4;           // attempts after the first for retryable failures
  int parallel = 8;          // concurrent transfers
  double timeout_s = 60;     // a transfer that moves no byte for this long fails (and is retried)
  std::filesystem::path cache_dir;  // downloaded objects; empty: $XDG_CACHE_HOME/sprof, ~/.cache/sprof
  bool progress = false;     // a progress line on stderr for long transfers
};

class RoleCredentials;

struct S3Config {
  std::string endpoint;  // scheme://host[:port], no trailing '/'
  bool path_style = true;
  std::string region;
  Credentials credentials;  // the keys found, or a role's first ones
  // A role's temporary credentials (a container's, an EC2 instance's), fetched again before they
  // expire; null for keys from the environment or the AWS files.
  std::shared_ptr<RoleCredentials> role;
  S3Options options;
  // What to sign the next request with.
  Credentials current_credentials() const;
};

// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, else AWS_PROFILE (default
// "default") in AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials), then AWS_CONFIG_FILE
// (~/.aws/config, section "profile NAME" or "default"), then a container's role
// (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI), then the EC2 instance's role (IMDSv2,
// unless AWS_EC2_METADATA_DISABLED=true). Errors (permission) when no credentials are found,
// naming where sprof looked.
Result<S3Config> resolve_s3_config(const S3Options& options);

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes
};

// One page of a ListObjectsV2 answer: its objects (Key, Size, ETag without quotes), whether more
// follow and the token for them. Lenient: what a page does not hold reads as empty.
struct ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_token;
};
ListPage parse_list_page(std::string_view xml);

struct TransferStats {
  uint64_t requests = 0;
  uint64_t retries = 0;
  uint64_t bytes_down = 0;
  uint64_t bytes_up = 0;

  TransferStats& operator+=(const TransferStats& other) {
    requests += other.requests;
    retries += other.retries;
    bytes_down += other.bytes_down;
    bytes_up += other.bytes_up;
    return *this;
  }
};

class S3Client {
 public:
  explicit S3Client(S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Config& config() const { return config_; }

  // Every object under `prefix` (ListObjectsV2, following continuation tokens).
  Result<std::vector<ObjectInfo>> list(const std::string& bucket, const std::string& prefix);
  // HEAD: missing keys are an io error whose message says "no such key".
  Result<ObjectInfo> head(const std::string& bucket, const std::string& key);
  // GET into `path` through a temporary name beside it, renamed when the length matches
  // `expected_size` (when given): nothing partial is ever left at `path`.
  Status get_to_file(const std::string& bucket, const std::string& key, const std::filesystem::path& path,
                     std::optional<uint64_t> expected_size = std::nullopt);
  struct Download {
    std::string key;
    std::filesystem::path path;
    std::optional<uint64_t> size;
  };
  // Up to options.parallel GETs at once; the first error is returned after the rest finished.
  Status get_many(const std::string& bucket, const std::vector<Download>& downloads);
  // PUT of a file, multipart above `multipart_threshold` bytes (parts of `part_size`).
  Result<ObjectInfo> put_file(const std::string& bucket, const std::string& key, const std::filesystem::path& path);
  Result<ObjectInfo> put_bytes(const std::string& bucket, const std::string& key, std::string_view bytes);
  // PUT of bytes [offset, offset + length) of a file.
  Result<ObjectInfo> put_range(const std::string& bucket, const std::string& key, const std::filesystem::path& path,
                               uint64_t offset, uint64_t length);
  Status remove(const std::string& bucket, const std::string& key);

  uint64_t multipart_threshold = uint64_t{64} << 20;
  uint64_t part_size = uint64_t{16} << 20;

  TransferStats stats() const;

 private:
  struct Impl;
  S3Config config_;
  int page_size_ = 0;  // ListObjectsV2 max-keys; 0: the server's default
  std::unique_ptr<Impl> impl_;
};

// A profile's prefix opened for store's readers: `profile` is the path "s3://bucket/prefix" with
// a source that lists the prefix once (one ListObjectsV2, or the cached listing while the
// prefix's generation marker is unchanged) and reads each object a reader needs from the cache
// (<cache>/s3/<bucket>/<key>, kept with its ETag), downloading it first if the cache has no copy
// of that ETag. Errors: bad URL (usage), no credentials, the listing failed, or the prefix holds
// nothing (bad_input).
struct S3Profile {
  store::ProfilePath profile;
  S3Location location;
  size_t objects = 0;
  uint64_t bytes = 0;
  std::filesystem::path cache_dir;
  std::shared_ptr<S3Client> client;  // stats(): what reading the profile transferred
};
Result<S3Profile> open_s3_profile(std::string_view url, const S3Options& options);

// A profile as a user names it: a local directory or trace file as it is (no client), or an S3
// prefix opened by open_s3_profile.
struct NamedProfile {
  store::ProfilePath where;
  std::shared_ptr<S3Client> s3;  // an S3 profile's client: what reading it transferred
};
Result<NamedProfile> open_named_profile(std::string_view text, const S3Options& options);

// Uploads the files of a local profile directory under `url`, skipping those already there with
// the same size and (single-part) MD5 ETag. `progress` sees (done, total) bytes.
struct UploadSummary {
  size_t files = 0;      // considered
  size_t uploaded = 0;
  size_t skipped = 0;    // already there
  uint64_t bytes = 0;    // uploaded
  std::vector<std::string> failed;  // "path: why"
};
Result<UploadSummary> upload_directory(const std::filesystem::path& dir, std::string_view url, const S3Options& options,
                                       const std::function<bool(const std::filesystem::path&)>& include = nullptr);
// The files of any directory under `url` as they are (key = prefix/relative path), skipping those
// already there with the same size and ETag: no job layout, no generation marker. `absent`: a
// folder under `url` that must hold nothing, else nothing is uploaded (a usage error naming it).
Result<UploadSummary> upload_tree(const std::filesystem::path& dir, std::string_view url, const S3Options& options,
                                  std::string_view absent = {});

// For commands that rewrite a profile in place (stats-dirs): the node's profile on S3 (open_s3_profile:
// a one-node job's prefix, or a job's nodes/<host>) copied into `into`, and put
// back: changed files uploaded in the job layout, objects whose files are gone removed. A prefix
// of several nodes, or one not in the job layout, is a usage error.
struct ProfileCopy {
  std::filesystem::path dir;
  S3Location job;    // the job's prefix
  std::string host;  // the node: its part is nodes/<host>/
  std::vector<std::string> before;  // the profile's files (relative paths) when copied
};
Result<ProfileCopy> copy_s3_profile(const store::ProfilePath& profile, const std::filesystem::path& into);
Result<UploadSummary> put_back(const ProfileCopy& copy, const S3Options& options);

// Append-only files of a recording in progress (sample logs, markers, GPU activity, system
// metrics) are uploaded as they grow, each new range as its own object "<key>.parts/<offset>"
// (offset in 16 decimal digits); a reader that finds parts but not the file itself reads their
// concatenation, which is the file as far as it was uploaded.
inline constexpr std::string_view kPartsSuffix = ".parts/";

// `record -o s3://...`: a record hook that uploads the local profile while the job runs (every
// `interval_s`, on a thread of its own, so the job never waits for S3), and finish(), called
// once record has written sprof.json, which uploads the rest whole and removes the parts. A
// failed upload is retried at the next pass; nothing is ever deleted locally.
struct LiveUploadResult {
  std::filesystem::path local_dir;
  std::string url;
  size_t files = 0;
  size_t uploaded = 0;     // in the final pass
  size_t passes = 0;       // periodic passes while the job ran
  size_t part_objects = 0; // ranges uploaded while it ran
  std::vector<std::string> not_uploaded;  // "path: why"
};
class LiveUpload : public launch::RecordHooks {
 public:
  // Checks the URL, the credentials and that this node's part of the prefix (nodes/<host>/, the
  // job layout: every node of a job records into one prefix) is empty, before anything runs.
  static Result<std::unique_ptr<LiveUpload>> create(std::string_view url, const std::string& host,
                                                    const S3Options& options, double interval_s);
  ~LiveUpload() override;
  void on_start(const launch::RecordContext& context) override;
  Status on_finish(const std::filesystem::path& output_dir, store::Manifest& manifest) override;
  std::string cost_name() const override { return "s3_upload"; }
  LiveUploadResult finish();

 private:
  struct Impl;
  explicit LiveUpload(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sprof::remote
