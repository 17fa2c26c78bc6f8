// A local profile directory to an S3 prefix (a sprof profile in the job layout, job_layout.hpp), resumable: objects already there with the same
// size and ETag (the MD5 of a single-part upload, or of the parts' MD5s for a multipart one) are
// skipped.

#include <fstream>
#include <map>

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

Result<UploadSummary> upload_directory(const fs::path& dir, std::string_view url, const S3Options& options,
                                       const std::function<bool(const fs::path&)>& include) {
  SPROF_TRY(S3Location location, parse_s3_url(url));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(ErrorKind::bad_input, "{} is not a directory", dir.string());
  SPROF_TRY(S3Config config, resolve_s3_config(options));
  S3Client client(config);
  SPROF_TRY(std::vector<ObjectInfo> remote,
            client.list(location.bucket, location.prefix.empty() ? std::string() : location.prefix + "/"));
  std::map<std::string, ObjectInfo> there;
  for (ObjectInfo& o : remote) there.emplace(o.key, std::move(o));

  // A sprof profile goes up in the job layout (its node's part of a job's prefix), anything else as it is.
  std::string host;
  if (fs::exists(dir / "sprof.json", ec)) {
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
  ProgressLine progress(options.progress, "uploading");
  for (const auto& [path, key] : files) {
    progress.update(summary.files, files.size(), summary.bytes);
    ++summary.files;
    uint64_t size = fs::file_size(path, ec);
    if (ec) {
      summary.failed.push_back(fmt::format("{}: {}", path.string(), ec.message()));
      continue;
    }
    auto found = there.find(key);
    if (found != there.end() && found->second.size == size && found->second.etag == expected_etag(path, size, client)) {
      ++summary.skipped;
      continue;
    }
    auto put = client.put_file(location.bucket, key, path);
    if (!put.ok()) {
      summary.failed.push_back(fmt::format("{}: {}", path.string(), put.error().message));
      // Credentials or permissions will not get better for the next file.
      if (put.error().kind == ErrorKind::permission) return std::move(put).error();
      continue;
    }
    ++summary.uploaded;
    summary.bytes += size;
    spdlog::debug("uploaded {} to s3://{}/{}", path.string(), location.bucket, key);
  }
  return summary;
}

}  // namespace sprof::remote
