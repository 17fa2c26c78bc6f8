#pragma once
// Reading another process's memory with process_vm_readv: one syscall per struct, or one per
// batch of scattered structs.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace sprof::pyframes {

class RemoteMemory {
 public:
  explicit RemoteMemory(pid_t pid) : pid_(pid) {}

  pid_t pid() const { return pid_; }

  // Reads exactly `size` bytes at `address`. False on any short or failed read; last_errno()
  // then says why (EFAULT: unmapped, ESRCH: process gone, EPERM: not allowed).
  bool read(uint64_t address, void* out, size_t size) const;
  // Reads up to `size` bytes; returns how many were read (stops at the first unmapped page).
  size_t read_partial(uint64_t address, void* out, size_t size) const;

  template <class T>
  bool read_value(uint64_t address, T& out) const {
    return read(address, &out, sizeof(T));
  }

  struct Piece {
    uint64_t address;
    void* out;
    size_t size;
  };
  // Reads many scattered pieces with as few syscalls as possible. Returns the number of
  // leading pieces read completely (all of them on success).
  size_t read_batch(std::span<const Piece> pieces) const;

  int last_errno() const { return last_errno_; }
  // What the reads cost so far: calls, remote regions (iovecs) and bytes asked for. The kernel's
  // cost grows with regions more than with calls (a call with one more region costs about a
  // third of a call).
  uint64_t syscalls() const { return syscalls_; }
  uint64_t regions() const { return regions_; }
  uint64_t bytes() const { return bytes_; }

 private:
  pid_t pid_;
  mutable int last_errno_ = 0;
  mutable uint64_t syscalls_ = 0;
  mutable uint64_t regions_ = 0;
  mutable uint64_t bytes_ = 0;
  // Reused by read_batch so that a warm sampler allocates nothing per tick.
  mutable std::vector<iovec> local_;
  mutable std::vector<iovec> remote_;
};

// Little-endian loads from a local copy of remote bytes (the structs we copy are packed
// C structs of the target; no alignment guarantees in our buffers).
template <class T>
T load(const uint8_t* base, size_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof(T));
  return value;
}
inline uint64_t load_u64(const std::vector<uint8_t>& bytes, size_t offset) {
  return offset + 8 <= bytes.size() ? load<uint64_t>(bytes.data(), offset) : 0;
}

}  // namespace sprof::pyframes
