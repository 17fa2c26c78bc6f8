#include "record/record_session.hpp"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "launch/child_process.hpp"
#include "launch/output_dir.hpp"
#include "launch/proc.hpp"
#include "launch/signals.hpp"
#include "sprof/clock.hpp"
#include "sprof/manifest_sections.hpp"
#include "sprof/version.hpp"

namespace sprof::recorder {

// The launch stage's parts: the child process, signals, /proc, the output directory.
using namespace launch;

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kHousekeepingNs = 20 * kMs;
constexpr int64_t kDiscoveryNs = 100 * kMs;
// A subprocess child execs microseconds to milliseconds after its fork; a second covers a loaded
// machine's scheduling delays many times over, while a forked Python child that works longer
// than that before exec'ing keeps its samples.
constexpr int64_t kForkExecWindowNs = 1000 * kMs;
constexpr int64_t kProgressNs = 250 * kMs;
constexpr int64_t kFlushNs = 1000 * kMs;
// Attach retries: quick while an interpreter may be starting (after the process appeared or
// exec'd), then slow for processes that are simply not Python.
constexpr int64_t kFastWindowNs = 3000 * kMs;
constexpr int64_t kFirstRetryNs = 5 * kMs;
constexpr int64_t kFastRetryMaxNs = 50 * kMs;
constexpr int64_t kSlowRetryNs = 1000 * kMs;
constexpr int kMaxFailures = 50;

// The command as a shell would take it back, for messages.
std::string command_text(const std::vector<std::string>& command) {
  std::string text;
  for (const auto& a : command) {
    if (!text.empty()) text += ' ';
    bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                   "_-./=:,+@%") == std::string::npos;
    if (plain) {
      text += a;
      continue;
    }
    text += '\'';
    for (char c : a) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += '\'';
  }
  return text;
}

}  // namespace

RecordSession::RecordSession(RecordOptions options, std::vector<RecordHooks*> hooks, Attacher attacher)
    : options_(std::move(options)), hooks_(std::move(hooks)), attacher_(std::move(attacher)),
      hook_costs_(hooks_.size()) {
  sample_options_.blocking = options_.blocking;
}

RecordSession::~RecordSession() = default;

RecordSession::Tracked* RecordSession::find(pid_t pid) {
  for (auto& t : tracked_) {
    if (t->pid == pid) return t.get();
  }
  return nullptr;
}

RecordSession::Tracked& RecordSession::track(pid_t pid, bool root, int64_t now_ns) {
  auto t = std::make_unique<Tracked>();
  t->pid = pid;
  t->root = root;
  t->window_start_ns = now_ns;
  t->next_attempt_ns = now_ns;
  t->exe = exe_of(pid);
  t->info.pid = pid;
  t->info.ppid = parent_of(pid).value_or(0);
  t->info.node_id = fmt::format("{}-{}", pid, host_);
  tracked_.push_back(std::move(t));
  return *tracked_.back();
}

Result<RecordResult> RecordSession::run() {
  if (options_.rate_hz <= 0 || options_.rate_hz > 100'000) {
    return make_error(ErrorKind::usage, "--rate {} is out of range (1 to 100000 Hz)", options_.rate_hz);
  }
  if (options_.duration_s < 0) return make_error(ErrorKind::usage, "--duration must not be negative");
  if (options_.command.empty() == (options_.attach_pid == 0)) {
    return make_error(ErrorKind::usage, "give either a command after -- or --pid, not both");
  }
  host_ = node_host();
  manifest_.sprof_version = kVersion;
  manifest_.host = host_;
  manifest_.rate_hz = options_.rate_hz;
  manifest_.blocking = options_.blocking;
  manifest_.subprocesses = options_.subprocesses;
  // One clock pair, read back to back, converts every monotonic timestamp to epoch time.
  manifest_.clock_monotonic_ns = monotonic_ns();
  manifest_.clock_realtime_ns = realtime_ns();
  // Timer slack would add ~50 µs to every sleep: too much at 10 kHz.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

  signals_ = std::make_unique<SignalGuard>(options_.attach_pid == 0);
  auto started = options_.attach_pid != 0 ? start_attach() : start_launch();
  if (!started.ok()) {
    signals_.reset();
    return std::move(started).error();
  }
  if (started->has_value()) {  // the command could not be started
    signals_.reset();
    return std::move(**started);
  }

  RecordContext context{dir_, options_.attach_pid != 0 ? options_.attach_pid : child_, start_ns_};
  context.interrupted = [guard = signals_.get()] { return guard->stop_requested(); };
  for (auto* h : hooks_) h->on_start(context);
  // Starting the hooks took 34 ms under load (system metrics, NVML's dlopen): an attach stamped
  // before them put a window's start that long before its first sample.
  if (attach_ready_) try_attach(*find(options_.attach_pid), monotonic_ns(), std::move(attach_ready_));
  loop();
  auto result = finish();
  signals_.reset();
  return result;
}

Result<std::optional<RecordResult>> RecordSession::start_attach() {
  pid_t pid = options_.attach_pid;
  if (!is_running(pid)) return make_error(ErrorKind::usage, "--pid {}: no such process", pid);
  manifest_.mode = "attach";
  manifest_.target_pid = pid;
  dir_ = options_.output_dir.empty() ? fs::path(default_output_name(pid, manifest_.clock_realtime_ns))
                                     : options_.output_dir;
  SPROF_TRY_STATUS(check_output_dir(dir_, options_.force));
  // An interpreter that is still starting may need a moment; anything else fails at once.
  Result<std::unique_ptr<pyframes::PythonProcess>> process = attacher_(pid);
  for (int i = 0; i < 20 && !process.ok() && (process.error().kind == ErrorKind::io ||
                                                process.error().kind == ErrorKind::runtime); ++i) {
    usleep(20'000);
    process = attacher_(pid);
  }
  if (!process.ok()) return std::move(process).error();
  OutputDir output;
  SPROF_TRY_STATUS(output.create(dir_, options_.force));

  start_ns_ = monotonic_ns();
  manifest_.start_ns = start_ns_;
  track(pid, true, start_ns_).info.cmdline = cmdline_of(pid);
  write_manifest_now();
  attach_ready_ = std::move(process).value();
  return std::optional<RecordResult>();
}

Result<std::optional<RecordResult>> RecordSession::start_launch() {
  manifest_.mode = "launch";
  manifest_.command = options_.command;
  if (!options_.output_dir.empty()) SPROF_TRY_STATUS(check_output_dir(options_.output_dir, options_.force));

  // The child waits until released, so the directory can carry its pid and the hooks can
  // prepare its environment before a single instruction of the command runs.
  SPROF_TRY(PendingChild child, PendingChild::fork_waiting(options_.command, signals_->inherited()));
  dir_ = options_.output_dir.empty() ? fs::path(default_output_name(child.pid(), manifest_.clock_realtime_ns))
                                     : options_.output_dir;
  OutputDir output;
  SPROF_TRY_STATUS(output.create(dir_, options_.force));
  ChildSetup setup;
  for (auto* h : hooks_) {
    Status status = h->prepare_child(dir_, setup);
    if (!status.ok()) {
      output.rollback();
      return std::move(status).error();
    }
  }
  manifest_.target_pid = child.pid();
  start_ns_ = monotonic_ns();
  manifest_.start_ns = start_ns_;
  write_manifest_now();

  if (int sig = signals_->start_forwarding(child.pid()); sig != 0) {
    // Asked to stop before the command existed: it never runs, and sprof ends as it would have.
    spdlog::warn("got {} before {} started; not starting it", strsignal(sig), command_text(options_.command));
    output.rollback();
    RecordResult result;
    result.exit_code = 128 + sig;
    return std::optional<RecordResult>(std::move(result));
  }
  child_ = child.pid();
  Status released = child.release(setup);
  if (!released.ok()) {
    // The command never ran: say why, leave no half-made profile, exit like a shell would.
    signals_->stop_forwarding();
    child_ = 0;
    spdlog::error("{}", released.error().message);
    output.rollback();
    RecordResult result;
    result.exit_code = child.exec_failure_exit_code();
    return std::optional<RecordResult>(std::move(result));
  }
  Tracked& t = track(child_, true, start_ns_);
  t.exe.clear();  // still sprof's image until exec: let the first look after exec count as a change
  return std::optional<RecordResult>();
}

void RecordSession::loop() {
  sampler::LoopOptions loop_options;
  loop_options.rate_hz = options_.rate_hz;
  loop_options.seed = options_.seed != 0 ? options_.seed : uint64_t(realtime_ns());
  loop_options.start_ns = start_ns_;
  deadline_ns_ = options_.duration_s > 0 ? start_ns_ + int64_t(options_.duration_s * 1e9) : INT64_MAX;
  loop_options.deadline_ns = deadline_ns_;
  loop_options.housekeeping_ns = kHousekeepingNs;
  loop_ = std::make_unique<sampler::SamplingLoop>(loop_options);
  last_tick_ns_ = start_ns_;
  session_cpu_start_ns_ = thread_cpu_ns();  // the sampler's cost counts from here
  loop_->run([this](int64_t now) { return tick(now); }, [this](int64_t now) { housekeeping(now); },
             [this] { return stop_; });
}

bool RecordSession::tick(int64_t now_ns) {
  int64_t fallback = now_ns - last_tick_ns_;
  last_tick_ns_ = now_ns;
  bool any = false;
  for (auto& t : tracked_) {
    if (!t->sampling) continue;
    any = true;
    int64_t at = monotonic_ns();
    Status status = t->sampler->sample(at, fallback, sample_options_);
    if (!status.ok()) on_sample_error(*t, status.error(), at);
  }
  return any;
}

void RecordSession::on_sample_error(Tracked& t, const Error& error, int64_t now_ns) {
  if (!is_running(t.pid)) {
    // It exited between two ticks or in the middle of this one: its log ends here.
    spdlog::debug("pid {} exited ({})", t.pid, error.message);
    t.running = false;
    stop_sampling(t, now_ns);
    return;
  }
  // Alive but unreadable: most likely it exec'd another program. Re-attach from scratch.
  spdlog::debug("pid {}: sampling failed ({}); re-attaching", t.pid, error.message);
  stop_sampling(t, now_ns);
  t.left_python = true;
  t.last_error = error;
  if (++t.failures > kMaxFailures) {
    t.gave_up = true;
    t.info.error = fmt::format("gave up after {} failed samples: {}", t.failures, error.message);
    errors_.push_back(fmt::format("pid {}: {}", t.pid, t.info.error));
    return;
  }
  t.attempts = 0;
  t.window_start_ns = now_ns;
  t.next_attempt_ns = now_ns;
}

void RecordSession::stop_sampling(Tracked& t, int64_t now_ns) {
  if (!t.sampling) return;
  t.sampling = false;
  t.info.detach_ns = now_ns;
  t.sampler->detach();
}

void RecordSession::try_attach(Tracked& t, int64_t now_ns, std::unique_ptr<pyframes::PythonProcess> ready) {
  ++t.attempts;
  auto process = ready ? Result<std::unique_ptr<pyframes::PythonProcess>>(std::move(ready)) : attacher_(t.pid);
  if (!process.ok()) {
    t.last_error = process.error();
    if (process.error().kind == ErrorKind::permission) {
      // Descendants of sprof are readable unless something odd is going on; do not hammer.
      t.gave_up = true;
      t.info.error = process.error().message;
      return;
    }
    bool fast = now_ns - t.window_start_ns < kFastWindowNs;
    int64_t delay = fast ? std::min(kFastRetryMaxNs, kFirstRetryNs << std::min(t.attempts, 10)) : kSlowRetryNs;
    t.next_attempt_ns = now_ns + delay;
    return;
  }

  std::unique_ptr<pyframes::PythonProcess> py = std::move(process).value();
  if (!t.sampler) {
    fs::path rel = fs::path(store::kSamplesDir) / t.info.node_id;
    std::error_code ec;
    if (fs::exists(dir_ / rel, ec)) rel = fs::path(store::kSamplesDir) / fmt::format("{}-{}", t.info.node_id, tracked_.size());
    fs::create_directories(dir_ / rel, ec);
    auto writer = store::SampleLogWriter::create(dir_ / rel / std::string(store::kSampleLogFileName));
    if (!writer.ok()) {
      t.gave_up = true;
      t.info.error = writer.error().message;
      write_failed(writer.error().message);
      return;
    }
    t.sampler = std::make_unique<sampler::ProcessSampler>(std::move(writer).value());
    t.info.sample_log = (rel / std::string(store::kSampleLogFileName)).string();
  }
  t.info.python_version = py->version().str();
  t.info.executable = exe_of(t.pid);
  t.info.cmdline = cmdline_of(t.pid);
  t.info.ppid = parent_of(t.pid).value_or(t.info.ppid);
  t.info.rank = environment_variable(t.pid, "RANK").value_or("");
  t.info.local_rank = environment_variable(t.pid, "LOCAL_RANK").value_or("");
  t.info.world_size = environment_variable(t.pid, "WORLD_SIZE").value_or("");
  t.info.group_rank = environment_variable(t.pid, "GROUP_RANK").value_or("");
  if (t.info.attach_ns == 0) t.info.attach_ns = now_ns;
  t.info.error.clear();
  t.exe = t.info.executable;
  t.image = image_identity(t.pid);
  if (!t.ever_attached) t.fork_copy = !t.root && t.image == image_identity(t.info.ppid);
  t.left_python = false;
  t.last_error.reset();
  t.sampler->attach(std::move(py), {t.pid, t.info.ppid, t.info.python_version, t.info.executable, now_ns});
  t.sampling = true;
  t.ever_attached = true;
  spdlog::debug("sampling pid {} (Python {}, {})", t.pid, t.info.python_version, t.info.executable);
  call_hooks([&] {
    for (auto* h : hooks_) h->on_process(t.info);
  });
}

void RecordSession::reap_child() {
  if (child_ <= 0) return;
  // Look before reaping: while --blocking pauses the command's main thread, a wait on it reports
  // that ptrace stop too (for a tracee, whatever the flags), and a stop consumed here would be
  // waited for by the thread pauser for ever, the command left stopped. Only an exit is ours.
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(child_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != child_ ||
      (info.si_code != CLD_EXITED && info.si_code != CLD_KILLED && info.si_code != CLD_DUMPED)) {
    return;
  }
  int status = 0;
  pid_t r = waitpid(child_, &status, WNOHANG);
  if (r == child_ && (WIFEXITED(status) || WIFSIGNALED(status))) {
    signals_->stop_forwarding();
    child_status_ = exit_code_from_wait_status(status);
    if (WIFSIGNALED(status)) manifest_.exit_signal = WTERMSIG(status);
    if (Tracked* t = find(child_)) {
      t->running = false;
      stop_sampling(*t, monotonic_ns());
    }
    child_ = 0;
  }
}

// An exec into the same binary (a static, non-PIE python re-exec'ing itself, or a fork that
// execs a new interpreter) can leave every address sprof reads valid, so reads keep succeeding
// on a different program. Compare the image identity instead, and re-attach when it changed.
void RecordSession::check_exec(int64_t now_ns) {
  for (auto& t : tracked_) {
    if (!t->sampling) continue;
    std::string image = image_identity(t->pid);
    if (image.empty() || image == t->image) continue;
    spdlog::debug("pid {} exec'd ({}); re-attaching", t->pid, exe_of(t->pid));
    stop_sampling(*t, now_ns);
    t->left_python = true;
    t->attempts = 0;
    t->window_start_ns = now_ns;
    t->next_attempt_ns = now_ns;
    try_attach(*t, now_ns);
  }
}

void RecordSession::discover(int64_t now_ns) {
  // Until something is sampled, look through the command's descendants for the interpreter (a
  // wrapper script, uv, torchrun); with --subprocesses, keep following all of them.
  bool any_attached = std::any_of(tracked_.begin(), tracked_.end(), [](const auto& t) { return t->ever_attached; });
  if (!options_.subprocesses && any_attached) return;
  for (size_t i = 0; i < tracked_.size(); ++i) {
    if (!tracked_[i]->running) continue;
    for (pid_t child : children_of(tracked_[i]->pid)) {
      if (find(child) == nullptr) track(child, false, now_ns);
    }
  }
}

void RecordSession::housekeeping(int64_t now_ns) {
  reap_child();
  if (manifest_.mode == "launch" && child_ == 0) {
    stop_ = true;
    stop_reason_ = "the command exited";
  }
  if (int sig = signals_->take_stop_request(); sig != 0) {
    stop_ = true;
    stop_reason_ = fmt::format("stopped by {}", strsignal(sig));
  }
  if (now_ns >= deadline_ns_) {
    stop_ = true;
    stop_reason_ = "duration reached";
  }

  for (auto& t : tracked_) {
    if (t->running && !t->sampling && !is_running(t->pid)) t->running = false;
  }
  if (manifest_.mode == "attach" && !tracked_.empty() && !tracked_.front()->running) {
    stop_ = true;
    stop_reason_ = "the process exited";
  }
  if (stop_) return;

  if (now_ns >= next_discovery_ns_) {
    check_exec(now_ns);
    discover(now_ns);
    next_discovery_ns_ = now_ns + kDiscoveryNs;
  }

  bool any_attached = std::any_of(tracked_.begin(), tracked_.end(), [](const auto& t) { return t->ever_attached; });
  for (size_t i = 0; i < tracked_.size(); ++i) {
    Tracked& t = *tracked_[i];
    if (!t.running || t.sampling || t.gave_up) continue;
    if (!options_.subprocesses && any_attached && !t.ever_attached) continue;
    std::string exe = exe_of(t.pid);
    if (exe != t.exe) {  // exec'd: a new program, maybe now an interpreter
      t.exe = exe;
      t.attempts = 0;
      t.window_start_ns = now_ns;
      t.next_attempt_ns = now_ns;
    }
    if (now_ns >= t.next_attempt_ns) try_attach(t, now_ns);
  }

  for (auto& t : tracked_) {
    if (!t->sampler) continue;
    if (t->sampling) t->sampler->housekeeping(now_ns);
    if (now_ns - t->sampler->log().last_flush_ns() >= kFlushNs) {
      Status status = t->sampler->log().flush();
      if (!status.ok()) {
        // The log stays readable up to its last complete chunk; sampling this process stops.
        write_failed(status.error().message);
        stop_sampling(*t, now_ns);
        t->gave_up = true;
      }
    }
  }

  if (now_ns >= next_progress_ns_) {
    next_progress_ns_ = now_ns + kProgressNs;
    RecordProgress p = progress(now_ns);
    call_hooks([&] {
      for (auto* h : hooks_) h->on_progress(p);
    });
  }
  // Hooks may start threads and processes (rule programs, actions, uploads): not at the
  // sampler's raised priority.
  call_hooks([&] {
    for (size_t i = 0; i < hooks_.size(); ++i) {
      int64_t before = thread_cpu_ns();
      hooks_[i]->on_housekeeping(now_ns);
      hook_costs_[i].while_sampling_cpu_ns += thread_cpu_ns() - before;
    }
  });
}

void RecordSession::call_hooks(const std::function<void()>& fn) {
  if (loop_) {
    loop_->at_own_priority(fn);
  } else {
    fn();
  }
}

void RecordSession::add_costs_section() {
  // Each of sprof's own costs under its own name: the sampler (health.sampler_cpu_s) and each
  // hook's calls on the session thread while sampling and after it (the system monitor's own
  // thread is measured by the monitor: system_metrics.thread_cpu_s).
  store::OwnCostsSection section;
  for (size_t i = 0; i < hooks_.size(); ++i) {
    std::string name = hooks_[i]->cost_name();
    if (name.empty()) continue;
    const HookCost& c = hook_costs_[i];
    section.parts.push_back({name, double(c.while_sampling_cpu_ns) / 1e9, double(c.after_cpu_ns) / 1e9,
                             double(c.after_wall_ns) / 1e9});
  }
  store::set_section(manifest_, section);
}

RecordProgress RecordSession::progress(int64_t now_ns) const {
  RecordProgress p;
  p.elapsed_s = double(now_ns - start_ns_) / 1e9;
  for (const auto& t : tracked_) {
    if (!t->sampler) continue;
    p.samples += t->sampler->samples();
    p.invalid += t->sampler->invalid();
    p.threads += int(t->sampler->threads());
    if (t->sampling) ++p.processes;
  }
  return p;
}

void RecordSession::write_manifest_now() {
  Status status = store::write_manifest(dir_, manifest_);
  if (!status.ok()) write_failed(status.error().message);
}

void RecordSession::write_failed(const std::string& message) {
  // Said once per distinct failure; the profile is then incomplete and record exits non-zero.
  if (std::find(write_errors_.begin(), write_errors_.end(), message) != write_errors_.end()) return;
  spdlog::error("{}", message);
  write_errors_.push_back(message);
  errors_.push_back(message);
}

void RecordSession::wait_for_child() {
  while (child_ > 0) {
    int status = 0;
    pid_t r = waitpid(child_, &status, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == child_ && (WIFEXITED(status) || WIFSIGNALED(status))) {
      signals_->stop_forwarding();
      child_status_ = exit_code_from_wait_status(status);
      if (WIFSIGNALED(status)) manifest_.exit_signal = WTERMSIG(status);
    } else if (r < 0) {
      break;
    } else {
      continue;
    }
    child_ = 0;
  }
}

Result<RecordResult> RecordSession::finish() {
  int64_t end = monotonic_ns();
  spdlog::debug("sampling stopped: {}", stop_reason_);
  RecordResult result;
  result.output_dir = dir_;
  uint64_t samples = 0, invalid = 0;
  pyframes::ReadStats reads;
  for (auto& t : tracked_) {
    stop_sampling(*t, end);
    if (t->sampler && t->fork_copy && t->left_python && t->info.detach_ns - t->info.attach_ns < kForkExecWindowNs) {
      // Found between fork and exec (subprocess's child, slow to exec on a loaded machine): what
      // it showed was its parent's copied (or, after vfork, shared) stack, and then it became a
      // program sprof does not sample. Not a Python process of the job: left out with its log.
      spdlog::debug("pid {}: a fork that exec'd {} within {:.0f} ms; left out", t->pid, exe_of(t->pid),
                    double(t->info.detach_ns - t->info.attach_ns) / 1e6);
      (void)t->sampler->log().close();  // removed next: a failed close loses nothing
      std::error_code ec;
      fs::path log = dir_ / t->info.sample_log;
      fs::remove(log, ec);
      fs::remove(log.parent_path(), ec);  // only when empty
      t->sampler.reset();
      t->ever_attached = false;
      continue;
    }
    if (t->sampler) {
      Status status = t->sampler->log().close();
      if (!status.ok()) write_failed(status.error().message);
      const pyframes::ReadStats& read = t->sampler->read_stats();
      reads.remote_reads += read.remote_reads;
      reads.remote_regions += read.remote_regions;
      reads.remote_bytes += read.remote_bytes;
      reads.proc_reads += read.proc_reads;
      t->info.samples = t->sampler->samples();
      t->info.invalid = t->sampler->invalid();
      t->info.threads = t->sampler->threads();
      samples += t->info.samples;
      invalid += t->info.invalid;
      result.sampled_any = true;
    } else if (t->info.error.empty() && t->last_error) {
      t->info.error = t->last_error->message;
    }
    // Non-Python descendants are left out quietly; the command itself is always listed.
    if (t->ever_attached || t->root) {
      if (t->info.cmdline.empty()) t->info.cmdline = cmdline_of(t->pid);
      if (t->info.executable.empty()) t->info.executable = t->exe;
      manifest_.processes.push_back(t->info);
    }
  }
  bool permission_problem = false;
  if (!result.sampled_any && !tracked_.empty()) {
    const Tracked& root = *tracked_.front();
    permission_problem = root.last_error && root.last_error->kind == ErrorKind::permission;
    std::string why = root.last_error ? root.last_error->message : "it exited before an interpreter started";
    std::string what = manifest_.mode == "launch" ? command_text(options_.command) : fmt::format("pid {}", root.pid);
    std::string message = fmt::format("{} never became a Python process sprof could read, so nothing was sampled ({})",
                                      what, why);
    spdlog::warn("{}", message);
    errors_.push_back(message);
  }

  manifest_.end_ns = end;
  manifest_.errors = errors_;
  store::SamplingHealth& h = manifest_.health;
  const uint64_t ticks = loop_ ? loop_->ticks() : 0;
  h.ticks = ticks;
  h.thread_samples = samples;
  h.invalid = invalid;
  h.late_ticks = loop_ ? loop_->timer().late_ticks() : 0;
  h.max_lag_ms = loop_ ? double(std::max<int64_t>(loop_->timer().max_lag_ns(), 0)) / 1e6 : 0;
  h.behind_warnings = loop_ ? loop_->timer().behind_events() : 0;
  h.achieved_rate_hz = end > start_ns_ ? double(ticks) / (double(end - start_ns_) / 1e9) : 0;
  h.mean_tick_us = ticks > 0 ? double(loop_->tick_wall_ns()) / double(ticks) / 1e3 : 0;
  h.max_tick_ms = loop_ ? double(loop_->max_tick_ns()) / 1e6 : 0;
  if (ticks > 0) {
    h.remote_reads_per_tick = double(reads.remote_reads) / double(ticks);
    h.regions_per_tick = double(reads.remote_regions) / double(ticks);
    h.bytes_per_tick = double(reads.remote_bytes) / double(ticks);
    h.proc_reads_per_tick = double(reads.proc_reads) / double(ticks);
  }
  // The sampler's own CPU time: the session thread's, less what the hooks took on it.
  int64_t hooks_cpu_ns = 0;
  for (const HookCost& c : hook_costs_) hooks_cpu_ns += c.while_sampling_cpu_ns;
  h.sampler_cpu_s = double(std::max<int64_t>(thread_cpu_ns() - session_cpu_start_ns_ - hooks_cpu_ns, 0)) / 1e9;
  h.process_cpu_s = double(process_cpu_ns()) / 1e9;
  manifest_.state = "complete";
  if (manifest_.mode == "attach" && !tracked_.empty()) manifest_.running_at_end = is_running(tracked_.front()->pid);

  for (size_t i = 0; i < hooks_.size(); ++i) {
    int64_t cpu_before = thread_cpu_ns(), wall_before = monotonic_ns();
    Status status = hooks_[i]->on_finish(dir_, manifest_);
    hook_costs_[i].after_cpu_ns += thread_cpu_ns() - cpu_before;
    hook_costs_[i].after_wall_ns += monotonic_ns() - wall_before;
    if (!status.ok()) {
      write_failed(status.error().message);
      manifest_.errors.push_back(status.error().message);
    }
  }
  add_costs_section();
  if (child_status_) manifest_.exit_status = child_status_;
  write_manifest_now();

  if (manifest_.mode == "launch") {
    if (child_ > 0) {
      spdlog::info("sampling stopped ({}); waiting for {} to exit", stop_reason_, command_text(options_.command));
      wait_for_child();
      manifest_.exit_status = child_status_;
      write_manifest_now();
    }
    result.exit_code = child_status_.value_or(1);
    // Stopped by a signal while writing, after the command ended: its status if it failed, else
    // the signal's, so that a script sees the profile is unfinished.
    if (int sig = signals_->stop_signal(); sig != 0 && result.exit_code == 0) result.exit_code = 128 + sig;
  }
  // A profile that could not be written whole, or a launch that read nothing for want of
  // permission, is a failure even when the command succeeded (its status is in the manifest).
  result.write_errors = write_errors_;
  if ((!write_errors_.empty() || permission_problem) && result.exit_code == 0) result.exit_code = 1;
  result.manifest = manifest_;
  return result;
}

}  // namespace sprof::recorder
