#include "sprof/file_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace sprof::store {
namespace {

Error errno_error(int err, std::string_view action, const std::filesystem::path& path) {
  ErrorKind kind = ErrorKind::io;
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ELOOP:
    case EISDIR:
    case ENAMETOOLONG: kind = ErrorKind::bad_input; break;
    case EACCES:
    case EPERM: kind = ErrorKind::permission; break;
    default: break;
  }
  // A path that cannot be written is an output problem (I/O), not bad input.
  if (action == "write" && kind == ErrorKind::bad_input) kind = ErrorKind::io;
  const char* why = err == ELOOP ? "too many levels of symbolic links (a symlink loop?)"
                                 : std::strerror(err);
  return make_error(kind, "{}: cannot {}: {}", path.string(), action, why);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

Status read_file_bytes(const std::filesystem::path& path, std::string& out, size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return errno_error(errno, "open", path);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return errno_error(errno, "stat", path);
  if (S_ISDIR(st.st_mode)) return errno_error(EISDIR, "read", path);
  if (!S_ISREG(st.st_mode)) {
    return make_error(ErrorKind::bad_input, "{}: not a regular file", path.string());
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return make_error(ErrorKind::bad_input, "{}: file of {} bytes is larger than the {} bytes "
                      "sprof reads",
                      path.string(), st.st_size, max_bytes);
  }
  // Read to EOF rather than trusting st_size: the file may change under us.
  out.resize(static_cast<size_t>(st.st_size) + 1);
  size_t used = 0;
  while (true) {
    if (used == out.size()) {
      if (out.size() > max_bytes) {
        return make_error(ErrorKind::bad_input, "{}: file grew beyond the {} bytes sprof reads",
                          path.string(), max_bytes);
      }
      out.resize(out.size() * 2);
    }
    ssize_t n = ::read(fd.get(), out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "read", path);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out.resize(used);
  return {};
}

Status write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temp = path;
  temp += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) return errno_error(errno, "write", path);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::unlink(temp.c_str());
      return errno_error(err, "write", path);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd.release()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return errno_error(err, "write", path);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return errno_error(err, "write", path);
  }
  return {};
}

bool is_temporary_file_name(std::string_view name) {
  auto digits = [](std::string_view s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos; };
  size_t tmp = name.rfind(".tmp");
  if (tmp != std::string_view::npos && tmp > 0) {
    std::string_view rest = name.substr(tmp + 4);
    if (rest.empty() || digits(rest)) return true;
    if (rest.front() == '.') {
      size_t dot = rest.find('.', 1);
      if (dot != std::string_view::npos && digits(rest.substr(1, dot - 1)) && digits(rest.substr(dot + 1))) return true;
    }
  }
  size_t part = name.rfind(".part");
  if (part != std::string_view::npos && part > 0) {
    std::string_view rest = name.substr(part + 5);
    size_t dash = rest.find('-');
    if (dash != std::string_view::npos && digits(rest.substr(0, dash)) && digits(rest.substr(dash + 1))) return true;
  }
  return false;
}

}  // namespace sprof::store
