#include "pyframes/remote_memory.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace sprof::pyframes {

size_t RemoteMemory::read_partial(uint64_t address, void* out, size_t size) const {
  if (size == 0) return 0;
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  ++syscalls_;
  ++regions_;
  bytes_ += size;
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n < 0) {
    last_errno_ = errno;
    return 0;
  }
  if (static_cast<size_t>(n) < size) last_errno_ = EFAULT;
  return static_cast<size_t>(n);
}

bool RemoteMemory::read(uint64_t address, void* out, size_t size) const {
  if (size == 0) return true;
  if (address == 0) {
    last_errno_ = EFAULT;
    return false;
  }
  return read_partial(address, out, size) == size;
}

size_t RemoteMemory::read_batch(std::span<const Piece> pieces) const {
  // IOV_MAX is 1024 on Linux; process_vm_readv stops at the first remote iovec it cannot read.
  constexpr size_t kMaxIov = 1024;
  std::vector<iovec>& local = local_;
  std::vector<iovec>& remote = remote_;
  size_t done = 0;
  while (done < pieces.size()) {
    size_t count = std::min(kMaxIov, pieces.size() - done);
    local.resize(count);
    remote.resize(count);
    size_t total = 0;
    for (size_t i = 0; i < count; ++i) {
      const Piece& p = pieces[done + i];
      local[i] = {p.out, p.size};
      remote[i] = {reinterpret_cast<void*>(p.address), p.size};
      total += p.size;
    }
    ++syscalls_;
    regions_ += count;
    bytes_ += total;
    ssize_t n = process_vm_readv(pid_, local.data(), count, remote.data(), count, 0);
    if (n < 0) {
      last_errno_ = errno;
      return done;
    }
    if (static_cast<size_t>(n) == total) {
      done += count;
      continue;
    }
    // Short read: count the pieces that were read completely.
    last_errno_ = EFAULT;
    size_t got = static_cast<size_t>(n);
    for (size_t i = 0; i < count && got >= pieces[done].size; ++i) {
      got -= pieces[done].size;
      ++done;
    }
    return done;
  }
  return done;
}

size_t RemoteMemory::merge_reads(std::span<const uint64_t> addresses, size_t size, std::vector<Region>& regions,
                                 std::vector<size_t>& offsets) {
  regions.clear();
  offsets.clear();
  size_t total = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const uint64_t a = addresses[i];
    if (regions.empty() || a > regions.back().address + regions.back().size + kMergeGap ||
        a + size - regions.back().address > kMergeMax) {
      regions.push_back({a, 0, total, 0});
    }
    Region& r = regions.back();  // the last region ends where the buffer does
    const uint64_t end = std::max<uint64_t>(r.address + r.size, a + size);
    total += end - (r.address + r.size);
    r.size = end - r.address;
    offsets.push_back(r.at + (a - r.address));
    r.objects_through = i + 1;
  }
  return total;
}

}  // namespace sprof::pyframes
