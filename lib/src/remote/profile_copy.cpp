// A node's profile on S3 copied to a local directory and put back, for stats-dirs.

#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "remote/job_layout.hpp"
#include "sprof/manifest.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/s3.hpp"

namespace fs = std::filesystem;

namespace sprof::remote {

Result<ProfileCopy> copy_s3_profile(const store::ProfilePath& profile, const fs::path& into) {
  const std::string url = profile.path.string();
  SPROF_TRY(S3Location location, parse_s3_url(url));
  const fs::path& root = profile.path;
  const store::ProfileFiles& files = profile.files();
  if (files.kind(root / "sprof.json") != store::FileKind::file) {
    if (files.kind(root / kNodesDir) == store::FileKind::directory) {
      std::vector<std::string> nodes;
      if (auto entries = files.list(root / kNodesDir); entries.ok()) {
        for (const auto& e : *entries) nodes.push_back(e.name);
      }
      return make_error(ErrorKind::usage, "{} is a job of {} nodes ({}): give one, such as {}/{}/{}", url, nodes.size(),
                        fmt::join(nodes, ", "), url, kNodesDir, nodes.empty() ? std::string() : nodes.front());
    }
    return make_error(ErrorKind::bad_input, "{}: no sprof.json, not a profile sprof recorded", url);
  }
  SPROF_TRY(store::Manifest manifest, store::read_manifest(root, files));
  ProfileCopy copy;
  copy.dir = into;
  copy.host = manifest.host.empty() ? std::string("localhost") : manifest.host;
  // The job's prefix: the URL itself, or its parent when it names nodes/<host>.
  std::string node_suffix = fmt::format("{}/{}", kNodesDir, copy.host);
  copy.job = location;
  if (location.prefix == node_suffix) {
    copy.job.prefix.clear();
  } else if (location.prefix.ends_with("/" + node_suffix)) {
    copy.job.prefix = location.prefix.substr(0, location.prefix.size() - node_suffix.size() - 1);
  }
  SPROF_TRY(std::vector<fs::path> paths, store::files_under(files, root));
  files.prefetch(paths);
  for (const fs::path& path : paths) {
    fs::path rel = path.lexically_relative(root);
    std::string bytes;
    SPROF_TRY_STATUS(files.read(path, bytes));
    fs::path target = into / rel;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.close();
    if (!out) return make_error(ErrorKind::io, "cannot write {}", target.string());
    copy.before.push_back(rel.generic_string());
  }
  return copy;
}

Result<UploadSummary> put_back(const ProfileCopy& copy, const S3Options& options) {
  SPROF_TRY(UploadSummary summary, upload_directory(copy.dir, copy.job.url(), options));
  // What the rewrite removed (stats directories of another window) goes from S3 too: the node's
  // copy and, for framework/ and system/, the top-level one.
  std::set<std::string> now;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(copy.dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) now.insert(it->path().lexically_relative(copy.dir).generic_string());
  }
  SPROF_TRY(S3Config config, resolve_s3_config(options));
  S3Client client(config);
  for (const std::string& rel : copy.before) {
    if (now.contains(rel)) continue;
    for (const std::string& key : job_keys(copy.job.prefix, copy.host, rel)) {
      if (auto status = client.remove(copy.job.bucket, key); !status.ok()) {
        summary.failed.push_back(fmt::format("removing s3://{}/{}: {}", copy.job.bucket, key, status.error().message));
      }
    }
  }
  if (auto marked = write_generation_markers(client, copy.job, copy.host); !marked.ok()) {
    summary.failed.push_back(fmt::format("s3://{}/{}: {}", copy.job.bucket, kGenerationFile, marked.error().message));
  }
  return summary;
}

}  // namespace sprof::remote
