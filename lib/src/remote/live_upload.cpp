// record -o s3://...: the local profile uploaded while the job runs, the rest at the end.

#include <sys/stat.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "remote/job_layout.hpp"
#include "sprof/file_bytes.hpp"
#include "sprof/s3.hpp"

namespace fs = std::filesystem;

namespace sprof::remote {
namespace {

// Files the recording only appends to.
bool append_only(const fs::path& rel) {
  std::string first = rel.begin() == rel.end() ? std::string() : rel.begin()->string();
  if (first == "samples" || first == "markers" || first == "system") return true;
  return first == "gpu" && rel.extension() == ".gpu";
}

struct FileState {
  uint64_t appended = 0;   // bytes uploaded as parts
  uint64_t whole_size = 0; // size and mtime of the last whole upload
  int64_t whole_mtime = -1;
  bool whole = false;
  std::vector<std::string> parts;  // keys of the parts uploaded
};

int64_t mtime_ns(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

struct LiveUpload::Impl {
  S3Location location;
  std::string host;  // this node's part of the job's prefix: nodes/<host>/
  std::unique_ptr<S3Client> client;
  double interval_s = 10;
  fs::path dir;
  std::map<std::string, FileState> files;  // by path relative to dir
  std::map<std::string, std::string> problems;
  size_t passes = 0;
  size_t part_objects = 0;

  std::mutex mutex;
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;

  // While the job runs, only the node's own copy; the top-level copies at the end.
  std::string key_of(const fs::path& rel) const { return job_keys(location.prefix, host, rel).front(); }

  std::vector<fs::path> local_files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      std::string name = it->path().filename().string();
      if (store::is_temporary_file_name(name)) continue;  // being written: its final name comes up
      out.push_back(it->path().lexically_relative(dir));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // While the job runs: append-only files by their new ranges, the others whole when they changed.
  void periodic_pass() {
    for (const fs::path& rel : local_files()) {
      fs::path path = dir / rel;
      std::error_code ec;
      uint64_t size = fs::file_size(path, ec);
      if (ec) continue;
      FileState& st = files[rel.string()];
      std::string key = key_of(rel);
      Status status;
      if (append_only(rel)) {
        if (size <= st.appended) continue;
        std::string part = fmt::format("{}{}{:016d}", key, kPartsSuffix, st.appended);
        auto put = client->put_range(location.bucket, part, path, st.appended, size - st.appended);
        if (put.ok()) {
          st.appended = size;
          st.parts.push_back(part);
          ++part_objects;
        } else {
          status = std::move(put).error();
        }
      } else {
        int64_t mtime = mtime_ns(path);
        if (st.whole && st.whole_size == size && st.whole_mtime == mtime) continue;
        auto put = client->put_file(location.bucket, key, path);
        if (put.ok()) {
          st.whole = true;
          st.whole_size = size;
          st.whole_mtime = mtime;
        } else {
          status = std::move(put).error();
        }
      }
      if (status.ok()) {
        problems.erase(rel.string());
      } else {
        if (!problems.contains(rel.string())) spdlog::warn("upload of {}: {} (retried)", rel.string(), status.error().message);
        problems[rel.string()] = status.error().message;
      }
    }
    ++passes;
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::duration<double>(interval_s));
      if (stopping) break;
      lock.unlock();
      periodic_pass();
      lock.lock();
    }
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
};

LiveUpload::LiveUpload(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LiveUpload::~LiveUpload() { impl_->stop(); }

Result<std::unique_ptr<LiveUpload>> LiveUpload::create(std::string_view url, const std::string& host,
                                                       const S3Options& options, double interval_s) {
  auto impl = std::make_unique<Impl>();
  SPROF_TRY(impl->location, parse_s3_url(url));
  impl->host = host;
  SPROF_TRY(S3Config config, resolve_s3_config(options));
  impl->client = std::make_unique<S3Client>(std::move(config));
  impl->interval_s = interval_s;
  // Fail before the job starts when the bucket cannot be reached or listed.
  // Every node of a job records into the same prefix, each into its own nodes/<host>/.
  std::string mine = fs::path(job_keys(impl->location.prefix, host, "x").front()).parent_path().string() + "/";
  SPROF_TRY(std::vector<ObjectInfo> there, impl->client->list(impl->location.bucket, mine));
  if (!there.empty()) {
    return make_error(ErrorKind::usage,
                      "s3://{}/{} holds {} objects already: this node recorded into {} before (a profile is never "
                      "mixed with another; give a fresh prefix)",
                      impl->location.bucket, mine, there.size(), impl->location.url());
  }
  return std::unique_ptr<LiveUpload>(new LiveUpload(std::move(impl)));
}

void LiveUpload::on_start(const launch::RecordContext& context) {
  impl_->dir = context.output_dir;
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

Status LiveUpload::on_finish(const fs::path& /*output_dir*/, store::Manifest& /*manifest*/) {
  impl_->stop();  // the rest goes up in finish(), once sprof.json is final
  return {};
}

LiveUploadResult LiveUpload::finish() {
  Impl& m = *impl_;
  m.stop();
  LiveUploadResult result;
  result.local_dir = m.dir;
  result.url = m.location.url();
  result.passes = m.passes;
  result.part_objects = m.part_objects;
  m.problems.clear();
  for (const fs::path& rel : m.local_files()) {
    ++result.files;
    fs::path path = m.dir / rel;
    FileState& st = m.files[rel.string()];
    std::error_code ec;
    uint64_t size = fs::file_size(path, ec);
    std::vector<std::string> keys = job_keys(m.location.prefix, m.host, rel);
    bool uploaded_before = !ec && st.whole && st.whole_size == size && st.whole_mtime == mtime_ns(path);
    Status failed;
    for (size_t k = uploaded_before ? 1 : 0; k < keys.size() && failed.ok(); ++k) {
      auto put = m.client->put_file(m.location.bucket, keys[k], path);
      if (!put.ok()) failed = std::move(put).error();
    }
    if (!failed.ok()) {
      result.not_uploaded.push_back(fmt::format("{}: {}", path.string(), failed.error().message));
      continue;
    }
    ++result.uploaded;
    // The whole file is there: its parts are not needed any more.
    for (const std::string& part : st.parts) (void)m.client->remove(m.location.bucket, part);
    st.parts.clear();
  }
  if (auto marked = write_generation_markers(*m.client, m.location, m.host); !marked.ok()) {
    result.not_uploaded.push_back(fmt::format("s3://{}/{}: {}", m.location.bucket, kGenerationFile, marked.error().message));
  }
  return result;
}

}  // namespace sprof::remote
