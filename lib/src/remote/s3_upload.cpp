// A local profile directory to an S3 prefix (a sprof profile in the job layout, job_layout.hpp), resumable: objects already there with the same
// size and ETag (the MD5 of a single-part upload, or of the parts' MD5s for a multipart one) are
// skipped.

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "remote/job_layout.hpp"
#include "remote/md5.hpp"
#include "remote/progress.hpp"
#include "sprof/manifest.hpp"
#include "sprof/s3.hpp"

namespace fs = std::filesystem;

namespace sprof::remote {
namespace {

// The ETag S3 gives this file when uploaded as put_file would upload it.
std::string expected_etag(const fs::path& path, uint64_t size, const S3Client& client) {
  std::ifstream in(path, std::ios::binary);
  std::string buffer(1 << 20, '\0');
  auto md5_of_range = [&](uint64_t length) {
    Md5 md5;
    while (length > 0 && in) {
      in.read(buffer.data(), std::streamsize(std::min<uint64_t>(buffer.size(), length)));
      auto got = static_cast<uint64_t>(in.gcount());
      if (got == 0) break;
      md5.update(std::string_view(buffer.data(), got));
      length -= got;
    }
    return md5.digest();
  };
  if (size <= client.multipart_threshold) return Md5::hex(md5_of_range(size));
  Md5 outer;
  uint64_t parts = 0;
  for (uint64_t offset = 0; offset < size; offset += client.part_size, ++parts) {
    auto d = md5_of_range(std::min(client.part_size, size - offset));
    outer.update(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
  }
  return fmt::format("{}-{}", Md5::hex(outer.digest()), parts);
}

}  // namespace

Status write_generation_markers(S3Client& client, const S3Location& job, const std::string& host) {
  static std::atomic<uint64_t> counter{0};
  const std::string text = fmt::format(
      "{{\"generation\": \"{}-{}-{}\"}}\n",
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
      ::getpid(), counter.fetch_add(1));
  std::string base = job.prefix.empty() ? std::string() : job.prefix + "/";
  std::vector<std::string> keys;
  if (!host.empty()) keys.push_back(base + kNodesDir + "/" + host + "/" + kGenerationFile);
  keys.push_back(base + kGenerationFile);
  for (const std::string& key : keys) {
    if (auto put = client.put_bytes(job.bucket, key, text); !put.ok()) return std::move(put).error();
  }
  return {};
}

namespace {

// `profile`: a sprof profile goes up in the job layout (its node's part of a job's prefix) and
// renews the job's generation marker; anything else goes up as it is.
Result<UploadSummary> upload_files(const fs::path& dir, std::string_view url, const S3Options& options,
                                   const std::function<bool(const fs::path&)>& include, bool profile) {
  SPROF_TRY(S3Location location, parse_s3_url(url));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(ErrorKind::bad_input, "{} is not a directory", dir.string());
  SPROF_TRY(S3Config config, resolve_s3_config(options));
  S3Client client(config);
  SPROF_TRY(std::vector<ObjectInfo> remote,
            client.list(location.bucket, location.prefix.empty() ? std::string() : location.prefix + "/"));
  std::map<std::string, ObjectInfo> there;
  for (ObjectInfo& o : remote) there.emplace(o.key, std::move(o));

  std::string host;
  if (profile && fs::exists(dir / "sprof.json", ec)) {
    auto manifest = store::read_manifest(dir);
    if (!manifest.ok()) return std::move(manifest).error();
    host = manifest->host.empty() ? std::string("localhost") : manifest->host;
  }
  UploadSummary summary;
  std::vector<std::pair<fs::path, std::string>> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    fs::path rel = it->path().lexically_relative(dir);
    if (include && !include(rel)) continue;
    for (std::string& key : job_keys(location.prefix, host, rel)) files.emplace_back(it->path(), std::move(key));
  }
  if (ec) return make_error(ErrorKind::io, "cannot list {}: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  // A bounded pool of uploads at once (S3 answers each PUT in tens of milliseconds).
  ProgressLine progress(options.progress, "uploading");
  std::mutex mutex;
  std::atomic<size_t> next{0};
  std::optional<Error> refused;  // credentials or permissions: no use trying the other files
  auto worker = [&] {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= files.size()) return;
      {
        std::lock_guard lock(mutex);
        if (refused) return;
      }
      const auto& [path, key] = files[i];
      std::error_code size_ec;
      uint64_t size = fs::file_size(path, size_ec);
      std::string failure;
      bool skipped = false;
      if (size_ec) {
        failure = fmt::format("{}: {}", path.string(), size_ec.message());
      } else if (auto found = there.find(key);
                 found != there.end() && found->second.size == size &&
                 found->second.etag == expected_etag(path, size, client)) {
        skipped = true;
      } else if (auto put = client.put_file(location.bucket, key, path); !put.ok()) {
        failure = fmt::format("{}: {}", path.string(), put.error().message);
        if (put.error().kind == ErrorKind::permission) {
          std::lock_guard lock(mutex);
          if (!refused) refused = put.error();
        }
      } else {
        spdlog::debug("uploaded {} to s3://{}/{}", path.string(), location.bucket, key);
      }
      std::lock_guard lock(mutex);
      ++summary.files;
      if (!failure.empty()) {
        summary.failed.push_back(std::move(failure));
      } else if (skipped) {
        ++summary.skipped;
      } else {
        ++summary.uploaded;
        summary.bytes += size;
      }
      progress.update(summary.files, files.size(), summary.bytes);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(config.options.parallel, int(files.size())); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (refused) return *refused;
  if (profile) {
    if (auto marked = write_generation_markers(client, location, host); !marked.ok()) {
      summary.failed.push_back(fmt::format("s3://{}/{}: {}", location.bucket, kGenerationFile, marked.error().message));
    }
  }
  std::sort(summary.failed.begin(), summary.failed.end());
  return summary;
}

}  // namespace

Result<UploadSummary> upload_directory(const fs::path& dir, std::string_view url, const S3Options& options,
                                       const std::function<bool(const fs::path&)>& include) {
  return upload_files(dir, url, options, include, true);
}

Result<UploadSummary> upload_tree(const fs::path& dir, std::string_view url, const S3Options& options,
                                  std::string_view absent) {
  if (!absent.empty()) {
    SPROF_TRY(S3Location location, parse_s3_url(url));
    SPROF_TRY(S3Config config, resolve_s3_config(options));
    S3Client client(config);
    std::string prefix = (location.prefix.empty() ? std::string() : location.prefix + "/") + std::string(absent) + "/";
    SPROF_TRY(std::vector<ObjectInfo> there, client.list(location.bucket, prefix));
    if (!there.empty()) {
      return make_error(ErrorKind::usage, "s3://{}/{} is there already ({} objects): nothing uploaded", location.bucket,
                        prefix, there.size());
    }
  }
  return upload_files(dir, url, options, nullptr, false);
}

}  // namespace sprof::remote
