// PythonProcess for CPython 2.7 and 3.6-3.13: thread enumeration, GIL holder, native thread ids,
// blocking/non-blocking reads, and attach().

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "pyframes/code_cache.hpp"
#include "pyframes/layout.hpp"
#include "pyframes/proc_maps.hpp"
#include "pyframes/proc_tasks.hpp"
#include "pyframes/pthread_tids.hpp"
#include "pyframes/remote_memory.hpp"
#include "pyframes/runtime_finder.hpp"
#include "pyframes/stack_reader.hpp"
#include "pyframes/thread_names.hpp"
#include "pyframes/thread_pause.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::pyframes {

std::string PythonVersion::str() const { return fmt::format("{}.{}.{}", major, minor, micro); }

namespace {

constexpr size_t kMaxInterpreters = 64;
constexpr size_t kMaxThreads = 4096;
constexpr int64_t kListCheckNs = 10'000'000;
constexpr int64_t kAsleepStackMaxAgeNs = 1'000'000'000;
constexpr const char* kSupported = "3.6\u20133.13 and 2.7";

struct ThreadInfo {
  uint64_t ts_address = 0;
  std::vector<uint8_t> ts;
  uint64_t interp = 0;
  int64_t interp_id = 0;
  uint64_t pthread = 0;
  pid_t tid = 0;  // sprof's view; 0 unknown
  bool on_cpu = false;
  bool asleep = false;  // asleep since the last sample: its stack is the one read then
  StackReader::Prefetch prefetch;
  bool prefetched = false;  // `prefetch` is complete: prefetch() leaves it alone
  // Where this thread's newest frames were at the end of the last sample, to read them
  // speculatively in the same batch as the thread state (0: nothing to read).
  uint64_t last_leaf_at = 0;
  uint64_t last_chunk_at = 0;
  size_t last_chunk_bytes = 0;
};

class CPythonProcess final : public PythonProcess {
 public:
  CPythonProcess(pid_t pid, RuntimeLocation loc, Layout layout)
      : pid_(pid),
        mem_(pid),
        loc_(std::move(loc)),
        layout_(layout),
        codes_(layout_, mem_),
        reader_(layout_, mem_, codes_, TypeAddresses{loc_.code_type, loc_.frame_type}),
        tasks_(pid),
        pauser_(pid),
        tids_(mem_),
        names_(layout_, mem_, loc_) {
    version_ = loc_.version;
  }

  pid_t pid() const override { return pid_; }
  const PythonVersion& version() const override { return version_; }
  const CodeInfo& code(uint32_t code_id) const override { return codes_.info(code_id); }

  Status check_layout();
  Status sample(const SampleOptions& options, std::vector<ThreadStack>& out, ReadStats& stats) override;
  std::optional<std::string> thread_name(uint64_t python_thread_id) override;

 private:
  Error read_error(const char* what) const;
  Status enumerate(std::vector<ThreadInfo>& threads, uint64_t& torn);
  bool enumerate_known(std::vector<ThreadInfo>& threads);
  // Appends the speculative reads of thread `i` (its newest frames where they were last time)
  // to pieces_, and takes them into its prefetch once the batch is read.
  void speculate(std::vector<ThreadInfo>& threads, size_t i);
  void take_speculation(std::vector<ThreadInfo>& threads, size_t got);
  void take_pieces(std::vector<ThreadInfo>& threads, size_t got);
  void validate_speculation(ThreadInfo& t);
  bool reread(std::vector<ThreadInfo>& threads, size_t i);
  void keep_direct_frames(const ThreadInfo& t, bool good);
  void add_direct_frames(ThreadInfo& t, size_t i);
  void prefetch(std::vector<ThreadInfo>& threads);
  void remember_where(ThreadInfo& t) const;
  void resolve_tids(std::vector<ThreadInfo>& threads);
  uint64_t gil_holder(uint64_t interp);
  // The GIL holder of each interpreter of threads_ (0: none), into holders_.
  void find_holders();
  // kNoHolder when find_holders() did not look at `interp`.
  uint64_t holder_of(uint64_t interp) const;
  // The stack kept from the thread's last read when it has been asleep since (no read needed),
  // else nullptr.
  struct AsleepStack;
  const AsleepStack* asleep_stack(const ThreadInfo& t) const;
  static constexpr uint64_t kNoHolder = ~uint64_t{0};
  // Where the pointer to the newest interpreter lives: in _PyRuntime, or (2.7/3.6) interp_head.
  uint64_t interp_head_address() const {
    return loc_.runtime != 0 ? loc_.runtime + layout_.runtime_interpreters_head : loc_.interp_head;
  }

  pid_t pid_;
  RemoteMemory mem_;
  RuntimeLocation loc_;
  Layout layout_;
  PythonVersion version_;
  CodeCache codes_;
  StackReader reader_;
  ProcTasks tasks_;
  ThreadPauser pauser_;
  PthreadTids tids_;
  ThreadNames names_;
  bool layout_checked_ = false;
  std::unordered_map<uint64_t, uint64_t> gil_pointers_;  // interp -> its struct _gil_runtime_state
  std::vector<ThreadInfo> threads_;
  std::vector<std::pair<uint64_t, uint64_t>> holders_;  // (interpreter, GIL holder's thread state)
  // The last stack read of each thread that was off CPU then (by thread state address).
  struct AsleepStack {
    pid_t tid = 0;
    std::vector<Frame> frames;
    bool truncated = false;
    // When it was read: kept at most kAsleepStackMaxAgeNs. A thread that has not run cannot
    // have changed its stack (and its frames hold their code objects), so this only bounds what
    // a sleep wrongly inferred would cost; a read a second per sleeping thread is cheap.
    int64_t read_ns = 0;
  };
  std::unordered_map<uint64_t, AsleepStack> asleep_stacks_;
  // The thread list as last walked (single interpreter only): next time all of it, and the GIL
  // holder, is read in one batch and only checked against the list's links.
  uint64_t known_interp_ = 0;
  int64_t known_interp_id_ = 0;
  std::vector<uint64_t> known_ts_;
  bool known_holder_valid_ = false;
  uint64_t known_holder_ = 0;
  // When the list's links (interpreter head, thread-list head, next interpreter) were last read:
  // they are checked every kListCheckNs, the thread states' own links every sample.
  int64_t known_links_at_ = 0;
  std::vector<RemoteMemory::Piece> pieces_;
  struct PieceOwner {
    size_t thread;
    enum { leaf, chunk, frames } kind;
    size_t first;  // index of its first piece in pieces_
    size_t count;  // frames: how many consecutive pieces (regions)
  };
  std::vector<size_t> ts_pieces_;  // per thread: index of its state's piece
  std::vector<RemoteMemory::Piece> rest_;
  // Per thread state: the frames its walks read one by one (prefetched next time).
  struct KeptFrames {
    std::vector<uint64_t> good;     // of the last good walk
    std::vector<uint64_t> planned;  // to prefetch
    std::vector<uint64_t> codes;    // the good walk's direct frames' code objects, to prefetch
  };
  std::unordered_map<uint64_t, KeptFrames> direct_frames_;
  std::vector<PieceOwner> piece_owners_;
  std::vector<pid_t> scratch_tids_;
  std::vector<std::vector<Frame>> spare_frames_;  // see sample()
  std::vector<uint64_t> scratch_pthreads_;
};

Error CPythonProcess::read_error(const char* what) const {
  int err = mem_.last_errno();
  if (err == ESRCH) return make_error(ErrorKind::io, "process {} has exited", pid_);
  if (err == EPERM || err == EACCES) {
    return make_error(ErrorKind::permission, "cannot read the memory of process {}: {}; {}", pid_,
                      std::strerror(err), permission_remedies(pid_));
  }
  if (::kill(pid_, 0) != 0 && errno == ESRCH) return make_error(ErrorKind::io, "process {} has exited", pid_);
  return make_error(ErrorKind::io, "cannot read {} of process {}: {}", what, pid_, std::strerror(err));
}

// Every interpreter and its thread states, each thread state copied whole. A list that breaks
// (a thread state freed while we follow it) ends early and is counted in `torn`.
Status CPythonProcess::enumerate(std::vector<ThreadInfo>& threads, uint64_t& torn) {
  if (enumerate_known(threads)) return {};
  known_ts_.clear();
  known_interp_ = 0;
  size_t interpreters = 0;
  size_t used = 0;
  uint64_t interp = 0;
  if (!mem_.read_value(interp_head_address(), interp)) {
    return read_error("the interpreter list");
  }
  for (size_t n = 0; interp != 0 && n < kMaxInterpreters; ++n) {
    uint64_t head = 0;
    uint64_t next = 0;
    int64_t id = 0;
    RemoteMemory::Piece pieces[3] = {{interp + layout_.interp_threads_head, &head, 8},
                                     {interp + layout_.interp_next, &next, 8},
                                     {layout_.interp_id != kAbsent ? interp + layout_.interp_id : interp, &id, 8}};
    if (mem_.read_batch(pieces) != 3) {
      ++torn;
      break;
    }
    if (layout_.interp_id == kAbsent) id = 0;
    uint64_t ts = head;
    for (size_t k = 0; ts != 0 && k < kMaxThreads; ++k) {
      if (used == threads.size()) threads.emplace_back();
      ThreadInfo& t = threads[used];
      t.ts.resize(layout_.ts_size);
      if (!mem_.read(ts, t.ts.data(), t.ts.size()) || load_u64(t.ts, layout_.ts_interp) != interp) {
        ++torn;
        break;
      }
      t.ts_address = ts;
      t.interp = interp;
      t.interp_id = id;
      t.pthread = load_u64(t.ts, layout_.ts_thread_id);
      t.tid = 0;
      t.on_cpu = false;
      t.asleep = false;
      t.prefetched = false;
      t.last_leaf_at = t.last_chunk_at = 0;
      ++used;
      ts = load_u64(t.ts, layout_.ts_next);
    }
    interp = next;
    ++interpreters;
  }
  threads.resize(used);
  if (direct_frames_.size() > used) {  // forget threads that ended
    std::unordered_map<uint64_t, KeptFrames> kept;
    for (size_t i = 0; i < used; ++i) {
      auto it = direct_frames_.find(threads[i].ts_address);
      if (it != direct_frames_.end()) kept.emplace(it->first, std::move(it->second));
    }
    direct_frames_.swap(kept);
  }
  if (interpreters == 1 && torn == 0 && used > 0) {
    known_interp_ = threads.front().interp;
    known_interp_id_ = threads.front().interp_id;
    for (const ThreadInfo& t : threads) known_ts_.push_back(t.ts_address);
    known_links_at_ = coarse_now_ns();
  }
  return {};
}

// The fast path of enumerate(): one batch reads every thread state known from last time and the
// GIL holder (and, every kListCheckNs, the interpreter list head, the interpreter's thread-list
// head and next link); it counts only if every link read still matches (else the list is walked
// again). The same batch reads each running thread's newest frames where they were last time
// (speculate()): a thread whose stack stayed put then needs no other read before its walk.
bool CPythonProcess::enumerate_known(std::vector<ThreadInfo>& threads) {
  known_holder_valid_ = false;
  if (known_interp_ == 0 || known_ts_.empty()) return false;
  size_t n = known_ts_.size();
  threads.resize(n);
  const int64_t now = coarse_now_ns();
  // A thread that starts is linked in at the head, and one that ends is unlinked: the states'
  // own prev and next links, read every sample, show both (the first state's prev is the new
  // head). The list heads are read only to catch what those cannot (a new interpreter; 2.7's
  // list has no prev links: a new thread is seen within kListCheckNs), three regions every tick
  // cost about 1.5 µs.
  const bool check_links = now - known_links_at_ >= kListCheckNs || now < known_links_at_;
  uint64_t head = 0;
  uint64_t first = 0;
  uint64_t next = 0;
  pieces_.clear();
  piece_owners_.clear();
  if (check_links) {
    pieces_.push_back({interp_head_address(), &head, 8});
    pieces_.push_back({known_interp_ + layout_.interp_threads_head, &first, 8});
    pieces_.push_back({known_interp_ + layout_.interp_next, &next, 8});
  }
  uint8_t gil[32] = {};
  bool gil_piece = false;
  if (layout_.gil_model == GilModel::runtime_tstate_current) {
    pieces_.push_back({loc_.runtime != 0 ? loc_.runtime + layout_.runtime_tstate_current : loc_.tstate_current,
                       gil, 8});
    gil_piece = true;
  } else if (auto it = gil_pointers_.find(known_interp_); it != gil_pointers_.end()) {
    uint64_t size = std::max(layout_.gil_last_holder + 8, layout_.gil_locked + 4);
    if (size <= sizeof(gil)) {
      pieces_.push_back({it->second, gil, size});
      gil_piece = true;
    }
  }
  // Each thread state right before its own speculative pieces: what lies between the two is
  // copied in between, and a busy thread's newest frames live a few microseconds.
  const size_t heads = pieces_.size();
  ts_pieces_.clear();
  for (size_t i = 0; i < n; ++i) {
    threads[i].ts.resize(layout_.ts_size);
    ts_pieces_.push_back(pieces_.size());
    pieces_.push_back({known_ts_[i], threads[i].ts.data(), layout_.ts_size});
    speculate(threads, i);
  }
  const size_t got = mem_.read_batch(pieces_);
  if (got < heads) return false;
  if (got < pieces_.size()) {
    // Memory of a speculative piece was unmapped since (a chunk or frame freed): the batch
    // stopped there. The thread states after it again, alone.
    rest_.clear();
    for (size_t at : ts_pieces_) {
      if (at >= got) rest_.push_back(pieces_[at]);
    }
    if (mem_.read_batch(rest_) != rest_.size()) return false;
  }
  if (check_links) {
    if (head != known_interp_ || next != 0 || first != known_ts_[0]) return false;
    known_links_at_ = now;
  }
  for (size_t i = 0; i < n; ++i) {
    ThreadInfo& t = threads[i];
    if (load_u64(t.ts, layout_.ts_interp) != known_interp_ ||
        load_u64(t.ts, layout_.ts_next) != (i + 1 < n ? known_ts_[i + 1] : 0) ||
        (layout_.ts_prev != kAbsent && load_u64(t.ts, layout_.ts_prev) != (i > 0 ? known_ts_[i - 1] : 0))) {
      return false;
    }
    t.ts_address = known_ts_[i];
    t.interp = known_interp_;
    t.interp_id = known_interp_id_;
    t.pthread = load_u64(t.ts, layout_.ts_thread_id);
    t.tid = 0;
    t.on_cpu = false;
  }
  take_speculation(threads, got);
  if (gil_piece) {
    if (layout_.gil_model == GilModel::runtime_tstate_current) {
      known_holder_ = load<uint64_t>(gil, 0);
    } else {
      known_holder_ = load<int32_t>(gil, layout_.gil_locked) != 0 ? load<uint64_t>(gil, layout_.gil_last_holder) : 0;
    }
    known_holder_valid_ = true;
  }
  return true;
}

void CPythonProcess::speculate(std::vector<ThreadInfo>& threads, size_t i) {
  ThreadInfo& t = threads[i];
  t.prefetched = false;
  t.prefetch.clear();
  // Asleep at the last sample: most likely still asleep, and then its kept stack needs no read.
  if (t.asleep) return;
  if (t.last_leaf_at != 0) {
    pieces_.push_back({t.last_leaf_at, &t.prefetch.leaf, 8});
    piece_owners_.push_back({i, PieceOwner::leaf, pieces_.size() - 1, 1});
  }
  if (t.last_chunk_at != 0) {
    t.prefetch.chunk.resize(t.last_chunk_bytes);
    pieces_.push_back({t.last_chunk_at, t.prefetch.chunk.data(), t.last_chunk_bytes});
    piece_owners_.push_back({i, PieceOwner::chunk, pieces_.size() - 1, 1});
  }
  add_direct_frames(t, i);
}

void CPythonProcess::add_direct_frames(ThreadInfo& t, size_t i) {
  auto it = direct_frames_.find(t.ts_address);
  if (it == direct_frames_.end() || it->second.planned.empty()) return;
  const size_t first = pieces_.size();
  const size_t count = t.prefetch.plan_frames(it->second.planned, reader_.frame_read_size(), it->second.codes,
                                              layout_.code_read_size, pieces_);
  piece_owners_.push_back({i, PieceOwner::frames, first, count});
}

// Marks what the batch read (the first `got` of pieces_) in each owner's prefetch.
void CPythonProcess::take_pieces(std::vector<ThreadInfo>& threads, size_t got) {
  for (const PieceOwner& owner : piece_owners_) {
    ThreadInfo& t = threads[owner.thread];
    const size_t read = owner.first >= got ? 0 : std::min(owner.count, got - owner.first);
    switch (owner.kind) {
      case PieceOwner::leaf:
        t.prefetch.has_leaf = read > 0;
        break;
      case PieceOwner::chunk:
        if (read == 0) t.prefetch.chunk.clear();
        break;
      case PieceOwner::frames:
        t.prefetch.frames_done(read);
        break;
    }
  }
}

// A speculative read counts only where the fresh thread state says the frames are still there:
// the same cframe (3.11/3.12), the same newest chunk, in use no further than what was copied.
// Frames are matched by address during the walk itself.
void CPythonProcess::take_speculation(std::vector<ThreadInfo>& threads, size_t got) {
  take_pieces(threads, got);
  for (ThreadInfo& t : threads) {
    if (!t.asleep) validate_speculation(t);
  }
}

void CPythonProcess::validate_speculation(ThreadInfo& t) {
  const uint64_t leaf_at = reader_.leaf_pointer_address(t.ts);
  if (leaf_at != t.last_leaf_at) t.prefetch.has_leaf = false;
  const uint64_t chunk_at = reader_.first_chunk_address(t.ts);  // 0 up to 3.10
  if (chunk_at != 0) {
    const uint64_t top = load_u64(t.ts, layout_.ts_datastack_chunk + 8);
    if (chunk_at != t.last_chunk_at || top < chunk_at || top - chunk_at > t.prefetch.chunk.size()) {
      t.prefetch.chunk.clear();
    }
  }
  t.prefetched = (leaf_at == 0 || t.prefetch.has_leaf) && (chunk_at == 0 || !t.prefetch.chunk.empty());
}

// A retry after a read that failed: the thread state again and, in the same batch, the frames
// where the failed walk found them (read one by one, or frame by frame up to 3.10, the stack
// moves under the reads of a busy thread faster than they are made).
bool CPythonProcess::reread(std::vector<ThreadInfo>& threads, size_t i) {
  ThreadInfo& t = threads[i];
  remember_where(t);
  keep_direct_frames(t, false);
  pieces_.clear();
  piece_owners_.clear();
  pieces_.push_back({t.ts_address, t.ts.data(), t.ts.size()});
  t.asleep = false;
  speculate(threads, i);
  const size_t got = mem_.read_batch(pieces_);
  if (got == 0 || load_u64(t.ts, layout_.ts_interp) != t.interp) return false;
  take_pieces(threads, got);
  validate_speculation(t);
  return true;
}

// The frames a walk read one by one, to read them in one batch next time: those of the last good
// walk, and after a failed walk (which stopped early, or read frames as they changed) its frames
// first and the good walk's after them.
void CPythonProcess::keep_direct_frames(const ThreadInfo& t, bool good) {
  constexpr size_t kMaxKept = 1024;
  const auto& direct = reader_.direct_frames();
  if (direct.empty()) return;
  KeptFrames& kept = direct_frames_[t.ts_address];
  const size_t n = std::min(direct.size(), kMaxKept);
  if (good) {
    kept.good.assign(direct.begin(), direct.begin() + static_cast<long>(n));
    const auto& codes = reader_.direct_codes();
    kept.codes.assign(codes.begin(), codes.begin() + static_cast<long>(std::min(codes.size(), kMaxKept)));
  }
  kept.planned.assign(direct.begin(), direct.begin() + static_cast<long>(n));
  if (good) return;
  for (uint64_t address : kept.good) {
    if (kept.planned.size() >= kMaxKept) break;
    if (std::find(direct.begin(), direct.end(), address) == direct.end()) kept.planned.push_back(address);
  }
}

// One batch for every thread the speculation did not cover: the current-frame pointer behind
// the cframe (3.11/3.12), the used part of the newest datastack chunk (3.11+) and the frames its
// last walk read one by one. A piece that cannot be read (and every one after it) is simply read
// again by the stack reader itself.
void CPythonProcess::prefetch(std::vector<ThreadInfo>& threads) {
  pieces_.clear();
  piece_owners_.clear();
  for (size_t i = 0; i < threads.size(); ++i) {
    ThreadInfo& t = threads[i];
    if (t.prefetched || asleep_stack(t) != nullptr) continue;
    t.prefetch.clear();
    if (uint64_t at = reader_.leaf_pointer_address(t.ts)) {
      pieces_.push_back({at, &t.prefetch.leaf, 8});
      piece_owners_.push_back({i, PieceOwner::leaf, pieces_.size() - 1, 1});
    }
    if (size_t bytes = reader_.first_chunk_bytes(t.ts)) {
      t.prefetch.chunk.resize(bytes);
      pieces_.push_back({reader_.first_chunk_address(t.ts), t.prefetch.chunk.data(), bytes});
      piece_owners_.push_back({i, PieceOwner::chunk, pieces_.size() - 1, 1});
    }
  }
  // Speculative frames last: a frame freed and unmapped since would cut the batch short.
  for (size_t i = 0; i < threads.size(); ++i) {
    ThreadInfo& t = threads[i];
    if (!t.prefetched && asleep_stack(t) == nullptr) add_direct_frames(t, i);
  }
  if (pieces_.empty()) return;
  take_pieces(threads, mem_.read_batch(pieces_));
}

// Where the thread's newest frames are now, for the next sample's speculative read.
void CPythonProcess::remember_where(ThreadInfo& t) const {
  t.last_leaf_at = reader_.leaf_pointer_address(t.ts);
  t.last_chunk_at = reader_.first_chunk_address(t.ts);
  t.last_chunk_bytes = reader_.first_chunk_bytes(t.ts);
}

void CPythonProcess::resolve_tids(std::vector<ThreadInfo>& threads) {
  if (layout_.ts_native_thread_id != kAbsent) {
    for (ThreadInfo& t : threads) {
      t.tid = tasks_.host_tid(static_cast<pid_t>(load_u64(t.ts, layout_.ts_native_thread_id)));
    }
    return;
  }
  scratch_pthreads_.clear();
  for (const ThreadInfo& t : threads) scratch_pthreads_.push_back(t.pthread);
  std::vector<pid_t> known;
  if (!tids_.offset()) known = tasks_.target_tids();
  tids_.lookup(scratch_pthreads_, known, scratch_tids_);
  for (size_t i = 0; i < threads.size(); ++i) threads[i].tid = tasks_.host_tid(scratch_tids_[i]);
}

void CPythonProcess::find_holders() {
  holders_.clear();
  if (known_holder_valid_) holders_.emplace_back(known_interp_, known_holder_);
  for (const ThreadInfo& t : threads_) {
    if (holder_of(t.interp) == kNoHolder) holders_.emplace_back(t.interp, gil_holder(t.interp));
  }
}

const CPythonProcess::AsleepStack* CPythonProcess::asleep_stack(const ThreadInfo& t) const {
  if (!t.asleep) return nullptr;
  auto it = asleep_stacks_.find(t.ts_address);
  if (it == asleep_stacks_.end() || it->second.tid != t.tid) return nullptr;
  return coarse_now_ns() - it->second.read_ns < kAsleepStackMaxAgeNs ? &it->second : nullptr;
}

uint64_t CPythonProcess::holder_of(uint64_t interp) const {
  for (const auto& [i, holder] : holders_) {
    if (i == interp) return holder;
  }
  return kNoHolder;
}

uint64_t CPythonProcess::gil_holder(uint64_t interp) {
  if (layout_.gil_model == GilModel::runtime_tstate_current) {
    uint64_t holder = 0;
    mem_.read_value(loc_.runtime != 0 ? loc_.runtime + layout_.runtime_tstate_current : loc_.tstate_current, holder);
    return holder;
  }
  auto it = gil_pointers_.find(interp);
  if (it == gil_pointers_.end()) {
    uint64_t gil = 0;
    if (!mem_.read_value(interp + layout_.interp_ceval_gil, gil) || gil == 0) return 0;
    it = gil_pointers_.emplace(interp, gil).first;
  }
  uint8_t state[32] = {};
  uint64_t size = std::max(layout_.gil_last_holder + 8, layout_.gil_locked + 4);
  if (size > sizeof(state) || !mem_.read(it->second, state, size)) return 0;
  // last_holder is not cleared on release: it counts only while the lock is held.
  if (load<int32_t>(state, layout_.gil_locked) == 0) return 0;
  return load<uint64_t>(state, layout_.gil_last_holder);
}

// Checks that the layout fits what is in memory, once the interpreter has threads.
Status CPythonProcess::check_layout() {
  std::vector<ThreadInfo> threads;
  uint64_t torn = 0;
  SPROF_TRY_STATUS(enumerate(threads, torn));
  if (threads.empty()) return {};  // not initialised yet: check on a later sample
  uint64_t interp = threads.front().interp;
  bool ok = true;
  if (layout_.interp_modules != kAbsent && loc_.dict_type != 0) {
    uint64_t modules = 0;
    uint64_t type = 0;
    if (mem_.read_value(interp + layout_.interp_modules, modules) && modules != 0) {
      ok = mem_.read_value(modules + layout_.objects.ob_type, type) && type == loc_.dict_type;
    }
  }
  if (!ok) {
    return make_error(ErrorKind::unsupported,
                      "the memory of process {} does not match the layout of CPython {} ({}); debug "
                      "(Py_DEBUG/Py_TRACE_REFS) and free-threaded builds are not supported",
                      pid_, version_.str(), loc_.image);
  }
  layout_checked_ = true;
  return {};
}

Status CPythonProcess::sample(const SampleOptions& options, std::vector<ThreadStack>& out, ReadStats& stats) {
  // Last sample's frame vectors are kept for this one's stacks: a warm sampler allocates nothing.
  for (ThreadStack& s : out) spare_frames_.push_back(std::move(s.frames));
  out.clear();
  struct CountReads {
    const RemoteMemory& mem;
    const ProcTasks& tasks;
    ReadStats& stats;
    uint64_t calls = mem.syscalls(), regions = mem.regions(), bytes = mem.bytes(), proc = tasks.proc_reads();
    ~CountReads() {
      stats.remote_reads += mem.syscalls() - calls;
      stats.remote_regions += mem.regions() - regions;
      stats.remote_bytes += mem.bytes() - bytes;
      stats.proc_reads += tasks.proc_reads() - proc;
    }
  } count_reads{mem_, tasks_, stats};
  if (!layout_checked_) SPROF_TRY_STATUS(check_layout());
  uint64_t torn = 0;
  SPROF_TRY_STATUS(enumerate(threads_, torn));
  if (threads_.empty() && torn == 0) return {};
  resolve_tids(threads_);
  // Run state first: a paused thread would always look idle. The GIL holder is running Python
  // (or C that kept the GIL): on CPU without asking /proc.
  find_holders();
  for (ThreadInfo& t : threads_) {
    t.asleep = false;
    t.on_cpu = holder_of(t.interp) == t.ts_address || tasks_.on_cpu(t.tid, options.blocking ? nullptr : &t.asleep);
  }

  struct ResumeGuard {
    ThreadPauser& pauser;
    ~ResumeGuard() { pauser.resume(); }
  } guard{pauser_};
  if (options.blocking) {
    // Only the threads that run: pausing a sleeping thread interrupts its system call, and it
    // stays runnable until it has restarted it (tens of milliseconds on a loaded machine), so the
    // next sample would see it on CPU. A sleeper's stack cannot change while it sleeps; one that
    // wakes during the read is read with the checks of an unpaused read.
    scratch_tids_.clear();
    for (const ThreadInfo& t : threads_) {
      if (t.tid > 0 && t.on_cpu) scratch_tids_.push_back(t.tid);
    }
    std::unordered_map<pid_t, bool> on_cpu;
    for (const ThreadInfo& t : threads_) on_cpu[t.tid] = t.on_cpu;
    SPROF_TRY_STATUS(pauser_.pause(scratch_tids_));
    // Read the thread list again now that it cannot change under us.
    torn = 0;
    SPROF_TRY_STATUS(enumerate(threads_, torn));
    resolve_tids(threads_);
    find_holders();
    for (ThreadInfo& t : threads_) {
      auto it = on_cpu.find(t.tid);
      t.on_cpu = it != on_cpu.end() ? it->second : tasks_.on_cpu(t.tid);
    }
  }
  stats.thread_samples += torn;
  stats.invalid += torn;
  codes_.begin_sample();
  prefetch(threads_);

  for (size_t index = 0; index < threads_.size(); ++index) {
    ThreadInfo& t = threads_[index];
    ThreadStack stack;
    if (!spare_frames_.empty()) {
      stack.frames = std::move(spare_frames_.back());
      spare_frames_.pop_back();
    }
    stack.python_thread_id = t.pthread;
    stack.native_tid = t.tid;
    stack.on_cpu = t.on_cpu;
    stack.holds_gil = holder_of(t.interp) == t.ts_address;
    stack.interpreter_id = t.interp_id;
    if (const AsleepStack* kept = asleep_stack(t)) {
      // It executed nothing since its stack was last read: that stack, without a read.
      ++stats.thread_samples;
      stack.frames = kept->frames;
      stack.truncated = kept->truncated;
      out.push_back(std::move(stack));
      continue;
    }
    bool paused = options.blocking && t.tid > 0 && pauser_.is_paused(t.tid);
    int attempts = paused ? 1 : 1 + std::max(0, options.retries);
    StackReader::Outcome outcome = StackReader::Outcome::invalid;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (attempt > 0) {
        ++stats.retried;
        if (!reread(threads_, index)) break;
      }
      outcome = reader_.read(t.ts, !paused, stack, &t.prefetch);
      // Unpaused, a stack that failed a check most likely changed under the read too: read
      // it again rather than drop it (dropping only stacks that keep failing biases less).
      if (outcome == StackReader::Outcome::ok) break;
    }
    ++stats.thread_samples;
    keep_direct_frames(t, outcome == StackReader::Outcome::ok);
    if (outcome != StackReader::Outcome::ok) {
      ++stats.invalid;
      spdlog::trace("pid {} thread {}: stack dropped: {}", pid_, t.tid, reader_.reason());
      continue;
    }
    if (stack.truncated) ++stats.truncated;
    if (!t.on_cpu && !options.blocking) {
      AsleepStack& kept = asleep_stacks_[t.ts_address];
      kept.tid = t.tid;
      kept.frames = stack.frames;
      kept.truncated = stack.truncated;
      kept.read_ns = coarse_now_ns();
    } else if (!asleep_stacks_.empty()) {
      asleep_stacks_.erase(t.ts_address);
    }
    out.push_back(std::move(stack));
  }
  if (asleep_stacks_.size() > threads_.size()) {  // forget threads that ended
    for (auto it = asleep_stacks_.begin(); it != asleep_stacks_.end();) {
      bool live = std::any_of(threads_.begin(), threads_.end(), [&](const ThreadInfo& t) { return t.ts_address == it->first; });
      it = live ? std::next(it) : asleep_stacks_.erase(it);
    }
  }
  scratch_tids_.clear();
  for (ThreadInfo& t : threads_) {
    scratch_tids_.push_back(t.tid);
    remember_where(t);
  }
  tasks_.retain(scratch_tids_);  // close the stat files of threads that ended
  return {};
}

std::optional<std::string> CPythonProcess::thread_name(uint64_t python_thread_id) {
  std::vector<ThreadInfo> threads;
  uint64_t torn = 0;
  if (!enumerate(threads, torn).ok() || threads.empty()) return std::nullopt;
  return names_.lookup(threads.front().interp, python_thread_id);
}

std::string supported_message(const PythonVersion& v) {
  return fmt::format("unsupported Python {}.{} (supported: {})", v.major, v.minor, kSupported);
}

}  // namespace

Result<std::unique_ptr<PythonProcess>> PythonProcess::attach(pid_t pid) {
  if (pid <= 0) return make_error(ErrorKind::usage, "invalid pid {}", pid);
  if (::kill(pid, 0) != 0 && errno == ESRCH) return make_error(ErrorKind::io, "no process with pid {}", pid);
  RemoteMemory mem(pid);
  SPROF_TRY(RuntimeLocation loc, locate_runtime(pid, mem));
  const PythonVersion& v = loc.version;
  bool legacy = (v.major == 2 && v.minor == 7) || (v.major == 3 && v.minor == 6);
  if (loc.runtime == 0 && !(legacy && loc.interp_head != 0 && loc.tstate_current != 0)) {
    if (legacy) {
      return make_error(ErrorKind::unsupported,
                        "Python {}.{} in process {} has no interp_head symbol ({} is stripped); sprof reads "
                        "{}.{} only with symbols, and {} without",
                        v.major, v.minor, pid, loc.image, v.major, v.minor, kSupported);
    }
    return make_error(ErrorKind::unsupported, "{} in process {}", supported_message(v), pid);
  }
  // Reading the runtime is also the permission check (Yama, containers).
  uint64_t probe = 0;
  if (!mem.read_value(loc.runtime != 0 ? loc.runtime : loc.interp_head, probe)) {
    int err = mem.last_errno();
    if (err == EPERM || err == EACCES) {
      return make_error(ErrorKind::permission, "cannot read the memory of process {}: {}; {}", pid,
                        std::strerror(err), permission_remedies(pid));
    }
    return make_error(ErrorKind::io, "cannot read the memory of process {}: {}", pid, std::strerror(err));
  }

  Layout layout;
  if (loc.has_debug_offsets) {
    std::vector<uint8_t> block(kDebugOffsetsSize313);
    if (!mem.read(loc.runtime, block.data(), block.size())) {
      return make_error(ErrorKind::io, "cannot read _Py_DebugOffsets of process {}", pid);
    }
    auto parsed = layout_from_debug_offsets(block);
    if (!parsed.ok()) {
      return make_error(ErrorKind::unsupported, "{} in process {}: {}", supported_message(v), pid,
                        parsed.error().message);
    }
    layout = *parsed;
    if (v.minor > 13) {
      spdlog::warn("process {} runs Python {}, newer than sprof knows; reading it with the 3.13 "
                   "_Py_DebugOffsets layout", pid, v.str());
    }
  } else {
    auto fixed = static_layout(v.major, v.minor);
    if (!fixed || (v.major == 3 && v.minor >= 13)) {
      return make_error(ErrorKind::unsupported, "{} in process {}", supported_message(v), pid);
    }
    layout = *fixed;
    // The runtime struct changed within 3.7; a version known only from a file name is taken as 3.7.4+.
    if (v.major == 3 && v.minor == 7 && v.micro <= 3 && loc.version_source != "file name") {
      layout.runtime_tstate_current = 1392;
    }
  }
  layout.major = v.major;
  layout.objects.unicode_type = loc.unicode_type;
  layout.objects.bytes_type = layout.objects.py2_strings ? loc.string_type : loc.bytes_type;
  spdlog::debug("pid {}: CPython {} (version from {}) in {}, _PyRuntime at {:#x}", pid, v.str(), loc.version_source,
                loc.image, loc.runtime);

  auto process = std::make_unique<CPythonProcess>(pid, std::move(loc), layout);
  SPROF_TRY_STATUS(process->check_layout());
  return std::unique_ptr<PythonProcess>(std::move(process));
}

}  // namespace sprof::pyframes
