#pragma once
// Kernel TIDs of Python threads before 3.11, which record only pthread_self(). glibc keeps the
// TID inside struct pthread (at 720 bytes on x86-64 glibc 2.2x-2.3x); rather than trust one
// number, the offset is found once by looking for the threads' real TIDs in their struct
// pthread, as austin does.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pyframes/remote_memory.hpp"

namespace sprof::pyframes {

class PthreadTids {
 public:
  explicit PthreadTids(const RemoteMemory& mem) : mem_(mem) {}

  // TIDs (as the target sees them) for each pthread_t; 0 where unknown. `known_tids` are the
  // target's current TIDs (in its own PID namespace), used to find the offset the first time.
  void lookup(std::span<const uint64_t> pthreads, std::span<const pid_t> known_tids, std::vector<pid_t>& out);

  std::optional<uint64_t> offset() const { return offset_; }

 private:
  bool discover(std::span<const uint64_t> pthreads, std::span<const pid_t> known_tids);

  const RemoteMemory& mem_;
  std::optional<uint64_t> offset_;
  int attempts_ = 0;
  // Reused by lookup() so that it allocates nothing once warm.
  std::vector<int32_t> values_;
  std::vector<RemoteMemory::Piece> pieces_;
  std::vector<size_t> index_;
};

}  // namespace sprof::pyframes
