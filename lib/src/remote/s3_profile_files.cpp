// A profile prefix on S3 under store's readers: one listing when opened, each object downloaded on
// first read into the cache (<cache>/s3/<bucket>/objects/<key>, its ETag beside it under
// etags/), reused while the listing's ETag and size match.

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/profile_files.hpp"
#include "remote/job_layout.hpp"
#include "sprof/s3.hpp"

namespace fs = std::filesystem;

namespace sprof::remote {
namespace {

fs::path normal(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class S3ProfileFiles final : public store::ProfileFiles {
 public:
  S3ProfileFiles(S3Location location, fs::path root, std::shared_ptr<S3Client> client, fs::path cache,
                 const std::vector<ObjectInfo>& objects)
      : location_(std::move(location)),
        root_(normal(root)),
        client_(std::move(client)),
        cache_(std::move(cache)) {
    size_t strip = location_.prefix.empty() ? 0 : location_.prefix.size() + 1;
    // A job's prefix with one node (nodes/<host>/, the job layout) reads as that node's profile:
    // its files at the root, over the top-level copies of framework/ and system/. With several
    // nodes the root is the job: the top level merges them, nodes/<host>/ holds each one.
    std::set<std::string> hosts;
    for (const ObjectInfo& o : objects) {
      std::string rel = o.key.substr(strip);
      if (!rel.starts_with("nodes/")) continue;
      size_t slash = rel.find('/', 6);
      if (slash != std::string::npos) hosts.insert(rel.substr(6, slash - 6));
    }
    std::string overlay = hosts.size() == 1 ? "nodes/" + *hosts.begin() + "/" : std::string();
    std::map<std::string, std::map<uint64_t, ObjectInfo>> parts;
    for (int pass = 0; pass < 2; ++pass) {
      for (const ObjectInfo& o : objects) {
        std::string rel = o.key.substr(strip);
        bool in_overlay = !overlay.empty() && rel.starts_with(overlay);
        if (!overlay.empty() && rel.starts_with("nodes/") && !in_overlay) continue;
        if (in_overlay != (pass == 1)) continue;  // the node's own files last, so they win
        if (in_overlay) rel = rel.substr(overlay.size());
        size_t at = rel.rfind(kPartsSuffix);
        if (at != std::string::npos) {
          std::string offset = rel.substr(at + kPartsSuffix.size());
          if (offset.size() == 16 && offset.find_first_not_of("0123456789") == std::string::npos) {
            parts[rel.substr(0, at)][std::stoull(offset)] = o;
            continue;
          }
        }
        objects_[rel] = o;
      }
    }
    // A file uploaded only in parts (the recording did not finish): their concatenation, as far
    // as the ranges follow each other.
    for (auto& [rel, ranges] : parts) {
      if (objects_.contains(rel)) continue;
      ObjectInfo whole;
      whole.key = location_.prefix.empty() ? rel : location_.prefix + "/" + rel;
      std::vector<ObjectInfo> chain;
      for (const auto& [offset, o] : ranges) {
        if (offset != whole.size) break;
        whole.size += o.size;
        whole.etag += o.etag;
        chain.push_back(o);
      }
      objects_[rel] = whole;
      parts_[rel] = std::move(chain);
    }
    for (const auto& [rel, o] : objects_) {
      // Every ancestor is a directory with this child.
      fs::path child(rel);
      while (child.has_parent_path() && child.parent_path() != child) {
        fs::path parent = child.parent_path();
        children_[parent.string()].insert(child.filename().string());
        child = parent;
      }
      children_[""].insert(child.string());
    }
  }

  Result<store::FileKind> status(const fs::path& path) const override {
    std::string rel = relative(path);
    if (rel.empty() || children_.contains(rel)) return store::FileKind::directory;
    if (objects_.contains(rel)) return store::FileKind::file;
    return store::FileKind::missing;
  }

  Status read(const fs::path& path, std::string& out, size_t max_bytes) const override {
    std::string rel = relative(path);
    auto it = objects_.find(rel);
    if (it == objects_.end()) {
      return make_error(ErrorKind::bad_input, "{}: no such object under {}", path.string(), location_.url());
    }
    const ObjectInfo& o = it->second;
    if (o.size > max_bytes) {
      return make_error(ErrorKind::bad_input, "{} is {} bytes, more than the {} sprof reads", path.string(), o.size,
                        max_bytes);
    }
    if (auto chain = parts_.find(rel); chain != parts_.end()) {
      out.clear();
      for (const ObjectInfo& part : chain->second) {
        fs::path file = cache_ / "objects" / part.key;
        SPROF_TRY_STATUS(ensure_cached(part, file));
        out += read_text(file);
      }
      if (out.size() != o.size) return make_error(ErrorKind::io, "{}: its parts changed while read", path.string());
      return {};
    }
    fs::path file = cache_ / "objects" / o.key;
    SPROF_TRY_STATUS(ensure_cached(o, file));
    out = read_text(file);
    if (out.size() != o.size) {
      return make_error(ErrorKind::io, "{}: the cached copy {} has {} bytes, the object {}", path.string(),
                        file.string(), out.size(), o.size);
    }
    return {};
  }

  void prefetch(const std::vector<fs::path>& paths) const override {
    std::vector<S3Client::Download> downloads;
    std::vector<const ObjectInfo*> objects;
    for (const fs::path& path : paths) {
      std::string rel = relative(path);
      std::vector<const ObjectInfo*> wanted;
      if (auto chain = parts_.find(rel); chain != parts_.end()) {
        for (const ObjectInfo& part : chain->second) wanted.push_back(&part);
      } else if (auto it = objects_.find(rel); it != objects_.end()) {
        wanted.push_back(&it->second);
      }
      for (const ObjectInfo* o : wanted) {
        if (cached(*o)) continue;
        downloads.push_back({o->key, cache_ / "objects" / o->key, o->size});
        objects.push_back(o);
      }
    }
    if (downloads.size() < 2) return;  // read() fetches a single one just as fast
    std::lock_guard lock(prefetch_mutex_);
    (void)client_->get_many(location_.bucket, downloads);
    for (const ObjectInfo* o : objects) {
      std::error_code ec;
      if (fs::file_size(cache_ / "objects" / o->key, ec) == o->size && !ec) (void)remember_etag(*o);
    }
  }

  // One listed object's bytes (through the cache), whatever path the overlay gives it.
  Status read_object(const ObjectInfo& o, std::string& out) const {
    fs::path file = cache_ / "objects" / o.key;
    SPROF_TRY_STATUS(ensure_cached(o, file));
    out = read_text(file);
    return {};
  }

  Result<std::vector<store::FileEntry>> list(const fs::path& dir) const override {
    std::string rel = relative(dir);
    auto it = children_.find(rel);
    if (it == children_.end()) {
      return make_error(ErrorKind::bad_input, "{}: no such directory under {}", dir.string(), location_.url());
    }
    std::vector<store::FileEntry> out;
    for (const std::string& name : it->second) {
      store::FileEntry e;
      e.path = dir / name;
      e.name = name;
      std::string child = rel.empty() ? name : rel + "/" + name;
      e.kind = children_.contains(child) ? store::FileKind::directory : store::FileKind::file;
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  std::string relative(const fs::path& path) const {
    fs::path rel = normal(path).lexically_relative(root_);
    std::string s = rel.string();
    if (s == ".") return {};
    while (!s.empty() && s.back() == '/') s.pop_back();
    return s;
  }

  bool cached(const ObjectInfo& o) const {
    std::error_code ec;
    return !o.etag.empty() && read_text(cache_ / "etags" / o.key) == o.etag &&
           fs::file_size(cache_ / "objects" / o.key, ec) == o.size && !ec;
  }

  // Downloads `o` unless the cache holds this ETag of it; readers on other threads fetch other
  // objects meanwhile (one download per object at a time).
  Status ensure_cached(const ObjectInfo& o, const fs::path& file) const {
    std::shared_ptr<std::mutex> object_mutex;
    {
      std::lock_guard lock(mutex_);
      auto& m = in_flight_[o.key];
      if (!m) m = std::make_shared<std::mutex>();
      object_mutex = m;
    }
    std::lock_guard object_lock(*object_mutex);
    if (cached(o)) return {};
    SPROF_TRY_STATUS(client_->get_to_file(location_.bucket, o.key, file, o.size));
    return remember_etag(o);
  }

  Status remember_etag(const ObjectInfo& o) const {
    std::error_code ec;
    fs::path etag_file = cache_ / "etags" / o.key;
    fs::create_directories(etag_file.parent_path(), ec);
    fs::path temporary = etag_file;
    temporary += ".tmp";
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << o.etag;
    }
    fs::rename(temporary, etag_file, ec);  // a cache without the ETag only costs a download
    return {};
  }

  S3Location location_;
  fs::path root_;
  std::shared_ptr<S3Client> client_;
  fs::path cache_;
  std::map<std::string, ObjectInfo> objects_;  // by path relative to the prefix
  std::map<std::string, std::vector<ObjectInfo>> parts_;  // files present only as parts, in order
  std::map<std::string, std::set<std::string>> children_;
  mutable std::mutex mutex_;
  mutable std::mutex prefetch_mutex_;
  mutable std::map<std::string, std::shared_ptr<std::mutex>> in_flight_;
};

fs::path default_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return fs::path(xdg) / "sprof";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return fs::path(home) / ".cache" / "sprof";
  return fs::temp_directory_path() / "sprof-cache";
}

}  // namespace

// A finished profile does not change: its listing is kept in the cache and used again while every
// sprof.json in it keeps its ETag (a HEAD each, where a listing takes a request per 1000 keys).
namespace {

bool is_manifest_key(std::string_view rel) {
  if (rel == "sprof.json") return true;
  if (!rel.starts_with("nodes/") || !rel.ends_with("/sprof.json")) return false;
  return std::count(rel.begin(), rel.end(), '/') == 2;
}

// One file per prefix, named by a hash of it (a prefix may hold any byte; "_bucket" or a name
// that is also a directory must not collide); the prefix is kept inside and checked on reading.
fs::path listing_file(const fs::path& bucket_cache, const S3Location& loc) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : loc.prefix) h = (h ^ c) * 1099511628211ull;
  return bucket_cache / "listings" / fmt::format("{:016x}.json", h);
}

std::string generation_key(const S3Location& loc) {
  return loc.prefix.empty() ? std::string(kGenerationFile) : loc.prefix + "/" + kGenerationFile;
}

// The ETag of the prefix's generation marker now, "" when there is none.
std::string generation_etag(S3Client& client, const S3Location& loc) {
  auto head = client.head(loc.bucket, generation_key(loc));
  return head.ok() ? head->etag : std::string();
}

std::optional<std::vector<ObjectInfo>> cached_listing(S3Client& client, const S3Location& loc, const fs::path& file) {
  std::string text = read_text(file);
  if (text.empty()) return std::nullopt;
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc["objects"].is_array() || !doc["manifests"].is_array() || doc["manifests"].empty() ||
      !doc["prefix"].is_string() || doc["prefix"] != loc.prefix || !doc["generation"].is_string()) {
    return std::nullopt;
  }
  // Every upload ends by rewriting the marker: another ETag (or one where there was none) means
  // objects came or went since the listing was kept.
  if (generation_etag(client, loc) != doc["generation"].get<std::string>()) return std::nullopt;
  for (const auto& m : doc["manifests"]) {
    auto head = client.head(loc.bucket, m.value("key", std::string()));
    if (!head.ok() || head->etag != m.value("etag", std::string())) return std::nullopt;
  }
  std::vector<ObjectInfo> objects;
  for (const auto& o : doc["objects"]) {
    objects.push_back(ObjectInfo{o.value("key", std::string()), o.value("size", uint64_t{0}), o.value("etag", std::string())});
  }
  return objects;
}

void remember_listing(const S3ProfileFiles& files, const S3Location& loc, const std::vector<ObjectInfo>& objects,
                      const fs::path& file) {
  size_t strip = loc.prefix.empty() ? 0 : loc.prefix.size() + 1;
  nlohmann::json manifests = nlohmann::json::array();
  for (const ObjectInfo& o : objects) {
    if (!is_manifest_key(std::string_view(o.key).substr(strip))) continue;
    std::string text;
    if (!files.read_object(o, text).ok()) return;
    auto manifest = nlohmann::json::parse(text, nullptr, false);
    std::string state = manifest.is_object() ? manifest.value("state", std::string()) : std::string();
    if (state != "complete" && state != "recovered") return;  // still recording: listings must stay fresh
    manifests.push_back({{"key", o.key}, {"etag", o.etag}});
  }
  if (manifests.empty()) return;
  std::string generation;
  for (const ObjectInfo& o : objects) {
    if (o.key == generation_key(loc)) generation = o.etag;
  }
  nlohmann::json doc = {{"prefix", loc.prefix}, {"generation", generation}, {"manifests", manifests},
                        {"objects", nlohmann::json::array()}};
  for (const ObjectInfo& o : objects) doc["objects"].push_back({{"key", o.key}, {"size", o.size}, {"etag", o.etag}});
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  fs::path temporary = file;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << doc.dump();
  }
  fs::rename(temporary, file, ec);
}

}  // namespace

Result<S3Profile> open_s3_profile(std::string_view url, const S3Options& options) {
  SPROF_TRY(S3Location location, parse_s3_url(url));
  SPROF_TRY(S3Config config, resolve_s3_config(options));
  auto client = std::make_shared<S3Client>(config);
  std::string prefix = location.prefix.empty() ? std::string() : location.prefix + "/";
  fs::path cache_root = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  fs::path listing = listing_file(cache_root / "s3" / location.bucket, location);
  std::optional<std::vector<ObjectInfo>> reused = cached_listing(*client, location, listing);
  std::vector<ObjectInfo> listed;
  if (reused) {
    listed = std::move(*reused);
  } else {
    SPROF_TRY(listed, client->list(location.bucket, prefix));
  }
  std::vector<ObjectInfo> objects;
  size_t unsafe = 0;
  S3Profile opened;
  opened.location = location;
  size_t outside = 0;
  for (ObjectInfo& o : listed) {
    // A key the server listed outside the prefix asked for (or the prefix itself) is not the
    // profile's: cut by the prefix's length it would become another path.
    if (!o.key.starts_with(prefix) || o.key.size() == prefix.size()) {
      ++outside;
      continue;
    }
    // Keys with '..', '.', empty segments or control bytes could leave the cache directory or
    // collide: not read.
    if (!is_safe_key(o.key)) {
      ++unsafe;
      continue;
    }
    opened.bytes += o.size;
    objects.push_back(std::move(o));
  }
  if (outside > 0) {
    spdlog::warn("{}: the server listed {} key{} outside the prefix: left out", location.url(), outside,
                 outside == 1 ? "" : "s");
  }
  if (unsafe > 0) {
    spdlog::warn("{}: {} object{} with '.', '..' or empty path segments or control bytes in the key left out",
                 location.url(), unsafe, unsafe == 1 ? "" : "s");
  }
  if (objects.empty()) {
    return make_error(ErrorKind::bad_input, "{}: no objects under this prefix (not a profile)", location.url());
  }
  opened.objects = objects.size();
  opened.cache_dir = cache_root / "s3" / location.bucket;
  spdlog::debug("{}: {} objects, {} bytes; cache {}", location.url(), opened.objects, opened.bytes,
                opened.cache_dir.string());
  auto files = std::make_shared<S3ProfileFiles>(location, fs::path(std::string(url)), client, opened.cache_dir, objects);
  if (!reused) remember_listing(*files, location, objects, listing);
  opened.profile = store::ProfilePath(fs::path(std::string(url)), std::move(files));
  opened.client = std::move(client);
  return opened;
}

Result<NamedProfile> open_named_profile(std::string_view text, const S3Options& options) {
  if (!is_s3_url(text)) return NamedProfile{store::ProfilePath(fs::path(std::string(text))), nullptr};
  SPROF_TRY(S3Profile opened, open_s3_profile(text, options));
  return NamedProfile{std::move(opened.profile), std::move(opened.client)};
}

}  // namespace sprof::remote
