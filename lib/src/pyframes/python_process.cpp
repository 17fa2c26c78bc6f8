// PythonProcess for CPython 3.7-3.13: thread enumeration, GIL holder, native thread ids,
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
constexpr const char* kSupported = "3.7\u20133.13";

struct ThreadInfo {
  uint64_t ts_address = 0;
  std::vector<uint8_t> ts;
  uint64_t interp = 0;
  int64_t interp_id = 0;
  uint64_t pthread = 0;
  pid_t tid = 0;  // sprof's view; 0 unknown
  bool on_cpu = false;
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
  void resolve_tids(std::vector<ThreadInfo>& threads);
  uint64_t gil_holder(uint64_t interp);

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
  std::vector<pid_t> scratch_tids_;
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
  size_t used = 0;
  uint64_t interp = 0;
  if (!mem_.read_value(loc_.runtime + layout_.runtime_interpreters_head, interp)) {
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
      ++used;
      ts = load_u64(t.ts, layout_.ts_next);
    }
    interp = next;
  }
  threads.resize(used);
  return {};
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

uint64_t CPythonProcess::gil_holder(uint64_t interp) {
  if (layout_.gil_model == GilModel::runtime_tstate_current) {
    uint64_t holder = 0;
    mem_.read_value(loc_.runtime + layout_.runtime_tstate_current, holder);
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
  out.clear();
  if (!layout_checked_) SPROF_TRY_STATUS(check_layout());
  uint64_t torn = 0;
  SPROF_TRY_STATUS(enumerate(threads_, torn));
  if (threads_.empty() && torn == 0) return {};
  resolve_tids(threads_);
  // Run state first: a paused thread would always look idle.
  std::unordered_map<pid_t, bool> on_cpu;
  for (ThreadInfo& t : threads_) {
    t.on_cpu = tasks_.on_cpu(t.tid);
    on_cpu[t.tid] = t.on_cpu;
  }

  struct ResumeGuard {
    ThreadPauser& pauser;
    ~ResumeGuard() { pauser.resume(); }
  } guard{pauser_};
  if (options.blocking) {
    scratch_tids_.clear();
    for (const ThreadInfo& t : threads_) {
      if (t.tid > 0) scratch_tids_.push_back(t.tid);
    }
    SPROF_TRY_STATUS(pauser_.pause(scratch_tids_));
    // Read the thread list again now that it cannot change under us.
    torn = 0;
    SPROF_TRY_STATUS(enumerate(threads_, torn));
    resolve_tids(threads_);
    for (ThreadInfo& t : threads_) {
      auto it = on_cpu.find(t.tid);
      t.on_cpu = it != on_cpu.end() ? it->second : tasks_.on_cpu(t.tid);
    }
  }
  stats.thread_samples += torn;
  stats.invalid += torn;

  std::unordered_map<uint64_t, uint64_t> holders;
  for (const ThreadInfo& t : threads_) {
    if (!holders.count(t.interp)) holders[t.interp] = gil_holder(t.interp);
  }

  for (ThreadInfo& t : threads_) {
    ThreadStack stack;
    stack.python_thread_id = t.pthread;
    stack.native_tid = t.tid;
    stack.on_cpu = t.on_cpu;
    stack.holds_gil = holders[t.interp] == t.ts_address;
    stack.interpreter_id = t.interp_id;
    bool paused = options.blocking && t.tid > 0 && pauser_.is_paused(t.tid);
    int attempts = paused ? 1 : 1 + std::max(0, options.retries);
    StackReader::Outcome outcome = StackReader::Outcome::invalid;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (attempt > 0) {
        ++stats.retried;
        if (!mem_.read(t.ts_address, t.ts.data(), t.ts.size()) || load_u64(t.ts, layout_.ts_interp) != t.interp) {
          break;
        }
      }
      outcome = reader_.read(t.ts_address, t.ts, !paused, stack);
      if (outcome != StackReader::Outcome::changed) break;
    }
    ++stats.thread_samples;
    if (outcome != StackReader::Outcome::ok) {
      ++stats.invalid;
      spdlog::trace("pid {} thread {}: stack dropped: {}", pid_, t.tid, reader_.reason());
      continue;
    }
    if (stack.truncated) ++stats.truncated;
    out.push_back(std::move(stack));
  }
  if (options.blocking) {
    std::vector<pid_t> alive;
    for (const ThreadInfo& t : threads_) alive.push_back(t.tid);
    tasks_.retain(alive);
  }
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
  if (loc.runtime == 0) return make_error(ErrorKind::unsupported, "{} in process {}", supported_message(v), pid);
  // Reading the runtime is also the permission check (Yama, containers).
  uint64_t probe = 0;
  if (!mem.read_value(loc.runtime, probe)) {
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
    if (v.minor == 7 && v.micro > 0 && v.micro <= 3) layout.runtime_tstate_current = 1392;
  }
  layout.major = v.major;
  layout.objects.unicode_type = loc.unicode_type;
  layout.objects.bytes_type = loc.bytes_type;
  spdlog::debug("pid {}: CPython {} (version from {}) in {}, _PyRuntime at {:#x}", pid, v.str(), loc.version_source,
                loc.image, loc.runtime);

  auto process = std::make_unique<CPythonProcess>(pid, std::move(loc), layout);
  SPROF_TRY_STATUS(process->check_layout());
  return std::unique_ptr<PythonProcess>(std::move(process));
}

}  // namespace sprof::pyframes
