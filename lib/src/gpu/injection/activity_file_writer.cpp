#include "gpu/injection/activity_file_writer.hpp"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "store/gpu/gpu_activity_format.hpp"

namespace sprof::gpu::injection {

ActivityFileWriter::~ActivityFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool ActivityFileWriter::open(const std::string& path, std::string& error) {
  path_ = path;
  // O_APPEND: every chunk lands whole at the end, one write(2) each; O_CLOEXEC: a command the
  // target execs does not inherit it.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!write_all(store::gpufile::file_header())) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    discard();
    return false;
  }
  return true;
}

bool ActivityFileWriter::write_all(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

bool ActivityFileWriter::append(const std::string& chunk) {
  if (fd_ < 0) return false;
  if (!write_all(chunk)) {
    ++failed_;
    return false;
  }
  ++chunks_;
  return true;
}

void ActivityFileWriter::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!path_.empty()) ::unlink(path_.c_str());
}

}  // namespace sprof::gpu::injection
