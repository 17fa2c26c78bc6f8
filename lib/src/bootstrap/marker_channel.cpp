// The recorder's end of the marker pipe.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "sprof/bootstrap.hpp"

namespace sprof::bootstrap {
namespace {

// Shell redirections in a target's scripts (exec 3>file) use the low numbers; the write end is
// inherited under its number, so keep it out of their way.
constexpr int kLowestWriteFd = 100;

}  // namespace

MarkerChannel::MarkerChannel(int read_fd, int write_fd, uint64_t inode)
    : read_fd_(read_fd), write_fd_(write_fd), inode_(inode) {}

MarkerChannel::MarkerChannel(MarkerChannel&& other) noexcept
    : read_fd_(std::exchange(other.read_fd_, -1)),
      write_fd_(std::exchange(other.write_fd_, -1)),
      inode_(other.inode_),
      parser_(std::move(other.parser_)) {}

MarkerChannel& MarkerChannel::operator=(MarkerChannel&& other) noexcept {
  if (this != &other) {
    close_all();
    read_fd_ = std::exchange(other.read_fd_, -1);
    write_fd_ = std::exchange(other.write_fd_, -1);
    inode_ = other.inode_;
    parser_ = std::move(other.parser_);
  }
  return *this;
}

MarkerChannel::~MarkerChannel() { close_all(); }

void MarkerChannel::close_all() noexcept {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
  read_fd_ = write_fd_ = -1;
}

Result<MarkerChannel> MarkerChannel::open(size_t capacity) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return make_error(ErrorKind::io, "cannot create the marker pipe: {}", std::strerror(errno));
  }
  int read_fd = fds[0];
  int write_fd = fds[1];
  int high = ::fcntl(write_fd, F_DUPFD_CLOEXEC, kLowestWriteFd);
  if (high >= 0) {
    ::close(write_fd);
    write_fd = high;
  }
  MarkerChannel channel(read_fd, write_fd, 0);  // owns the fds from here on
  if (::fcntl(read_fd, F_SETFL, ::fcntl(read_fd, F_GETFL) | O_NONBLOCK) != 0) {
    return make_error(ErrorKind::io, "cannot make the marker pipe non-blocking: {}", std::strerror(errno));
  }
  // Best effort: a bigger pipe rides out a slow reader; the kernel caps unprivileged sizes at
  // /proc/sys/fs/pipe-max-size, in which case the default 64 KiB stays.
  if (capacity > 0) ::fcntl(write_fd, F_SETPIPE_SZ, static_cast<int>(capacity));
  struct stat st {};
  if (::fstat(write_fd, &st) != 0) {
    return make_error(ErrorKind::io, "cannot stat the marker pipe: {}", std::strerror(errno));
  }
  channel.inode_ = st.st_ino;
  return channel;
}

std::string MarkerChannel::proc_path() const {
  return fmt::format("/proc/{}/fd/{}", ::getpid(), write_fd_);
}

int MarkerChannel::inherit_in_child() const noexcept {
  int flags = ::fcntl(write_fd_, F_GETFD);
  if (flags < 0 || ::fcntl(write_fd_, F_SETFD, flags & ~FD_CLOEXEC) != 0) return errno;
  return 0;
}

Result<size_t> MarkerChannel::drain(std::vector<store::Marker>& out) {
  std::array<char, 65536> buffer;
  size_t total = 0;
  for (;;) {
    ssize_t n = ::read(read_fd_, buffer.data(), buffer.size());
    if (n > 0) {
      parser_.feed(std::string_view(buffer.data(), static_cast<size_t>(n)), out);
      total += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return total;  // every writer closed
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return total;
    return make_error(ErrorKind::io, "reading the marker pipe: {}", std::strerror(errno));
  }
}

}  // namespace sprof::bootstrap
