#include "sprof/profile_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <mutex>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "sprof/file_bytes.hpp"

namespace sprof::store {
namespace fs = std::filesystem;
namespace {

FileKind kind_of(fs::file_type type) {
  switch (type) {
    case fs::file_type::regular: return FileKind::file;
    case fs::file_type::directory: return FileKind::directory;
    case fs::file_type::not_found:
    case fs::file_type::none: return FileKind::missing;
    default: return FileKind::other;
  }
}

class LocalFiles final : public ProfileFiles {
 public:
  Result<FileKind> status(const fs::path& path) const override {
    std::error_code ec;
    fs::file_status status = fs::status(path, ec);
    if (status.type() == fs::file_type::not_found) return FileKind::missing;
    if (ec) return make_error(ErrorKind::bad_input, "cannot read {}: {}", path.string(), ec.message());
    return kind_of(status.type());
  }

  Status read(const fs::path& path, std::string& out, size_t max_bytes) const override {
    return read_file_bytes(path, out, max_bytes);
  }

  // Listed with getdents64 directly: std::filesystem's iterator spends seven system calls on
  // a directory (open, fstat, two fcntl, two getdents, close) where four do, and a profile has
  // one directory per step or interval. An entry's type comes from d_type, with no stat; a link
  // (or a file system that leaves d_type unknown) is resolved with stat.
  Result<std::vector<FileEntry>> list(const fs::path& dir) const override {
    std::vector<FileEntry> out;
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return make_error(ErrorKind::io, "cannot list {}: {}", dir.string(), std::strerror(errno));
    alignas(8) char buffer[32768];
    int error = 0;
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n < 0) {
        error = errno;
        break;
      }
      if (n == 0) break;
      for (long at = 0; at < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buffer + at);
        at += d->d_reclen;
        const std::string_view name(d->d_name);
        if (name == "." || name == "..") continue;
        FileEntry entry;
        entry.path = dir / name;
        entry.name = std::string(name);
        entry.symlink = d->d_type == DT_LNK;
        fs::file_type type = d->d_type == DT_DIR ? fs::file_type::directory
                             : d->d_type == DT_REG ? fs::file_type::regular
                                                   : fs::file_type::none;
        std::error_code sec;
        if (type == fs::file_type::none) type = fs::status(entry.path, sec).type();
        if (sec || type == fs::file_type::not_found) {
          entry.problem = sec ? sec.message() : "no such file or directory";
        } else {
          entry.kind = kind_of(type);
        }
        out.push_back(std::move(entry));
      }
    }
    ::close(fd);
    if (error != 0) return make_error(ErrorKind::io, "cannot list {}: {}", dir.string(), std::strerror(error));
    std::sort(out.begin(), out.end(), [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
    return out;
  }
};

}  // namespace

const ProfileFiles& local_files() {
  static const LocalFiles files;
  return files;
}

Result<std::string> read_all(const ProfileFiles& files, const fs::path& path) {
  std::string out;
  SPROF_TRY_STATUS(files.read(path, out));
  return out;
}

Result<std::vector<fs::path>> files_under(const ProfileFiles& files, const fs::path& root) {
  std::vector<fs::path> out;
  if (files.kind(root) != FileKind::directory) return out;
  // Depth first, in name order: a directory's files and subdirectories in the order listed.
  std::function<Status(const fs::path&)> walk = [&](const fs::path& dir) -> Status {
    SPROF_TRY(auto entries, files.list(dir));
    for (const FileEntry& entry : entries) {
      if (entry.kind == FileKind::file) {
        out.push_back(entry.path);
      } else if (entry.kind == FileKind::directory && !entry.symlink) {
        SPROF_TRY_STATUS(walk(entry.path));
      }
    }
    return {};
  };
  SPROF_TRY_STATUS(walk(root));
  return out;
}

}  // namespace sprof::store
