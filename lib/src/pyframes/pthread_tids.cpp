#include "pyframes/pthread_tids.hpp"

#include <algorithm>

namespace sprof::pyframes {
namespace {

constexpr uint64_t kGlibcTidOffset = 720;  // offsetof(struct pthread, tid), glibc x86-64
constexpr size_t kScanBytes = 2048;

}  // namespace

bool PthreadTids::discover(std::span<const uint64_t> pthreads, std::span<const pid_t> known_tids) {
  // Offsets (4-aligned) at which every thread's struct pthread holds one of the known TIDs,
  // each thread a different one.
  std::vector<uint64_t> candidates;
  bool first = true;
  std::vector<uint8_t> buf(kScanBytes);
  for (uint64_t pthread : pthreads) {
    if (pthread == 0) continue;
    size_t got = mem_.read_partial(pthread, buf.data(), buf.size());
    std::vector<uint64_t> here;
    for (uint64_t off = 0; off + 4 <= got; off += 4) {
      int32_t value = load<int32_t>(buf.data(), off);
      if (value > 0 && std::find(known_tids.begin(), known_tids.end(), value) != known_tids.end()) {
        here.push_back(off);
      }
    }
    if (first) {
      candidates = here;
      first = false;
    } else {
      std::vector<uint64_t> both;
      std::set_intersection(candidates.begin(), candidates.end(), here.begin(), here.end(), std::back_inserter(both));
      candidates = both;
    }
  }
  if (candidates.empty()) return false;
  if (std::find(candidates.begin(), candidates.end(), kGlibcTidOffset) != candidates.end()) {
    offset_ = kGlibcTidOffset;
  } else {
    offset_ = candidates.front();
  }
  return true;
}

void PthreadTids::lookup(std::span<const uint64_t> pthreads, std::span<const pid_t> known_tids,
                         std::vector<pid_t>& out) {
  out.assign(pthreads.size(), 0);
  if (!offset_ && attempts_ < 100) {
    ++attempts_;
    if (!discover(pthreads, known_tids)) return;
  }
  if (!offset_) return;
  std::vector<int32_t>& values = values_;
  std::vector<RemoteMemory::Piece>& pieces = pieces_;
  std::vector<size_t>& index = index_;
  values.assign(pthreads.size(), 0);
  pieces.clear();
  index.clear();
  for (size_t i = 0; i < pthreads.size(); ++i) {
    if (pthreads[i] == 0) continue;
    pieces.push_back({pthreads[i] + *offset_, &values[i], 4});
    index.push_back(i);
  }
  size_t got = mem_.read_batch(pieces);
  for (size_t k = 0; k < got; ++k) {
    int32_t tid = values[index[k]];
    if (tid > 0) out[index[k]] = tid;
  }
}

}  // namespace sprof::pyframes
