// sprof top's sampling: pyframes on a thread of its own, aggregated per function; the launched
// command gets the bootstrap, whose markers (read from the pipe into a temporary directory)
// give the current step, its mode and the step rate.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "launch/proc.hpp"
#include "sprof/clock.hpp"
#include "sprof/layout.hpp"
#include "sprof/markers.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/pyframes.hpp"
#include "sprof/step_hook.hpp"
#include "sprof/sysmon.hpp"
#include "sprof/temp_dir.hpp"
#include "sprof/top.hpp"

namespace fs = std::filesystem;

namespace sprof::live {
namespace {

// utime + stime of a process, in clock ticks; -1 when gone.
int64_t cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::vector<std::string> fields;
  size_t pos = close + 2;
  while (pos < text.size() && fields.size() < 15) {
    size_t space = text.find(' ', pos);
    fields.push_back(text.substr(pos, space - pos));
    if (space == std::string::npos) break;
    pos = space + 1;
  }
  if (fields.size() < 13) return -1;
  return std::atoll(fields[11].c_str()) + std::atoll(fields[12].c_str());  // fields 14 and 15
}

// Every descendant of `root`.
std::set<pid_t> descendants(pid_t root) {
  std::set<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    for (pid_t child : launch::children_of(p)) {
      if (out.insert(child).second) todo.push_back(child);
    }
  }
  return out;
}

struct FunctionKey {
  std::string file;
  std::string name;
  int32_t line = 0;
  bool operator<(const FunctionKey& o) const { return std::tie(file, name, line) < std::tie(o.file, o.name, o.line); }
};

struct FunctionStats {
  uint64_t own_window = 0;
  uint64_t total_window = 0;
  int64_t own_ns = 0;
  int64_t total_ns = 0;
};

class Session final : public TopSession {
 public:
  explicit Session(TopOptions options) : options_(std::move(options)) {}
  ~Session() override {
    stop();
    if (markers_fd_ >= 0) ::close(markers_fd_);
  }

  Status launch() {
    start_ns_ = monotonic_ns();
    std::string why;
    gpus_ = sysmon::GpuProbe::open(why, options_.nvml_library);
    if (!gpus_) spdlog::debug("top: no GPU utilization: {}", why);
    if (options_.pid != 0) {
      target_ = options_.pid;
      if (::kill(target_, 0) != 0) return make_error(ErrorKind::usage, "--pid {}: no such process", target_);
      // Attach now, so that a process sprof cannot read fails at once.
      auto process = pyframes::PythonProcess::attach(target_);
      if (!process.ok()) return std::move(process).error();
      python_ = (*process)->version().str();
      processes_[target_] = std::move(process).value();
      // The first screen's CPU share: since the attach, not unknown.
      last_cpu_ticks_ = std::max<int64_t>(cpu_ticks(target_), 0);
      last_view_ns_ = start_ns_;
    } else {
      SPROF_TRY_STATUS(spawn());
    }
    thread_ = std::thread([this] { run(); });
    return {};
  }

  TopView view(TopSort sort) override {
    std::lock_guard lock(mutex_);
    TopView v;
    TopHeader& h = v.header;
    h.pid = target_;
    h.python = python_;
    h.processes = int(processes_.size());
    h.threads = threads_;
    h.samples = samples_;
    h.window_samples = window_samples_;
    h.elapsed_s = double(monotonic_ns() - start_ns_) / 1e9;
    h.step = step_;
    h.mode = mode_;
    h.status = status_;
    int64_t t = monotonic_ns();
    int64_t ticks = 0;
    for (const auto& [pid, _] : processes_) ticks += std::max<int64_t>(cpu_ticks(pid), 0);
    if (last_view_ns_ > 0 && t > last_view_ns_ && ticks >= last_cpu_ticks_) {
      h.cpu_share = double(ticks - last_cpu_ticks_) / double(sysconf(_SC_CLK_TCK)) / (double(t - last_view_ns_) / 1e9);
    }
    last_cpu_ticks_ = ticks;
    last_view_ns_ = t;
    if (gpus_) {
      h.gpu_known = true;
      for (const auto& g : gpus_->read()) h.gpu_utilization.push_back(g.utilization);
    }
    while (!step_times_.empty() && step_times_.front() < t - 10'000'000'000) step_times_.pop_front();
    if (step_) {
      double span = std::min(10.0, double(t - start_ns_) / 1e9);
      h.steps_per_s = span > 0 ? double(step_times_.size()) / span : 0;
    }
    for (auto& [key, s] : functions_) {
      TopRow r;
      r.function = key.name;
      r.file = key.file;
      r.line = key.line;
      r.own_share = window_samples_ ? double(s.own_window) / double(window_samples_) : 0;
      r.total_share = window_samples_ ? double(s.total_window) / double(window_samples_) : 0;
      r.own_s = double(s.own_ns) / 1e9;
      r.total_s = double(s.total_ns) / 1e9;
      v.rows.push_back(std::move(r));
      s.own_window = s.total_window = 0;
    }
    window_samples_ = 0;
    auto by = [sort](const TopRow& a, const TopRow& b) {
      switch (sort) {
        case TopSort::total:
          return std::tie(b.total_share, b.total_s, a.function) < std::tie(a.total_share, a.total_s, b.function);
        case TopSort::name:
          return std::tie(a.function, a.file) < std::tie(b.function, b.file);
        case TopSort::own:
          break;
      }
      return std::tie(b.own_share, b.own_s, a.function) < std::tie(a.own_share, a.own_s, b.function);
    };
    std::stable_sort(v.rows.begin(), v.rows.end(), by);
    return v;
  }

  bool finished() const override { return finished_.load(); }

  std::optional<int> exit_status() const override {
    std::lock_guard lock(mutex_);
    return exit_status_;
  }

  void stop() override {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }

  void end_command(int signal, double grace_s) override {
    if (!launched_ || exit_status_) return;
    // Reaps the command if it ended within `seconds`.
    auto ended_within = [this](double seconds) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      for (;;) {
        int status = 0;
        pid_t r = ::waitpid(target_, &status, WNOHANG);
        if (r == target_) {
          std::lock_guard lock(mutex_);
          exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          return true;
        }
        if (r < 0 || std::chrono::steady_clock::now() >= deadline) return r < 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    };
    if (ended_within(1.0)) return;
    ::kill(target_, signal);
    if (ended_within(grace_s)) return;
    ::kill(target_, SIGTERM);
    if (ended_within(2.0)) return;
    ::kill(target_, SIGKILL);
    ended_within(60.0);
  }

 private:
  Status spawn() {
    launch::ChildSetup setup;
    if (options_.inject) {
      if (auto scratch = TempDir::create("sprof-top-"); scratch.ok()) {
        markers_dir_ = std::move(scratch).value();
        steps_ = std::make_unique<bootstrap::StepRecordHook>(bootstrap::StepHookOptions{});
        if (!steps_->prepare_child(markers_dir_.path(), setup).ok()) steps_.reset();
      }
    }
    std::vector<char*> argv;
    for (const auto& a : options_.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t child = ::fork();
    if (child < 0) return make_error(ErrorKind::runtime, "cannot start {}: {}", options_.command[0], std::strerror(errno));
    if (child == 0) {
      for (const auto& [name, value] : setup.env) ::setenv(name.c_str(), value.c_str(), 1);
      for (int fd : setup.inherit_fds) ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) & ~FD_CLOEXEC);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "sprof: cannot run %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(errno == ENOENT ? 127 : 126);
    }
    target_ = child;
    launched_ = true;
    return {};
  }

  void run() {
    const int64_t interval = int64_t(1e9 / std::clamp(options_.rate_hz, 1.0, 10000.0));
    int64_t next = monotonic_ns();
    int64_t next_housekeeping = next;
    int64_t last_sample = next;
    std::vector<pyframes::ThreadStack> stacks;
    pyframes::ReadStats stats;
    pyframes::SampleOptions sample_options;
    while (!stopping_) {
      int64_t t = monotonic_ns();
      if (t >= next_housekeeping) {
        housekeeping(t);
        next_housekeeping = t + 100'000'000;
        if (finished_) break;
      }
      int64_t weight = t - last_sample;
      last_sample = t;
      std::unique_lock lock(mutex_);
      int threads = 0;
      for (auto it = processes_.begin(); it != processes_.end();) {
        stacks.clear();
        if (!it->second->sample(sample_options, stacks, stats).ok()) {
          it = processes_.erase(it);  // gone (or exec'd: found again by housekeeping)
          continue;
        }
        threads += int(stacks.size());
        add(*it->second, stacks, weight);
        ++it;
      }
      threads_ = threads;
      next += interval;
      int64_t sleep_ns = next - monotonic_ns();
      if (sleep_ns < -interval * 10) next = monotonic_ns();  // fell far behind: do not catch up in a burst
      lock.unlock();
      if (sleep_ns > 0) {
        timespec ts{time_t(sleep_ns / 1'000'000'000), long(sleep_ns % 1'000'000'000)};
        nanosleep(&ts, nullptr);
      }
    }
  }

  // Under mutex_.
  void add(const pyframes::PythonProcess& process, const std::vector<pyframes::ThreadStack>& stacks, int64_t weight) {
    for (const pyframes::ThreadStack& s : stacks) {
      if (s.frames.empty()) continue;
      if (!options_.idle && !s.on_cpu) continue;
      if (options_.gil && !s.holds_gil) continue;
      ++samples_;
      ++window_samples_;
      std::set<const FunctionStats*> seen;
      bool leaf = true;
      for (size_t i = 0; i < s.frames.size(); ++i) {
        const pyframes::CodeInfo& code = process.code(s.frames[i].code_id);
        // sprof's bootstrap (a step marker being sent) is not the program's: its caller is the leaf,
        // as in every view of a recording.
        if (store::is_sprof_bootstrap_file(code.filename) && !store::show_sprof_frames()) continue;
        FunctionStats& f = functions_[FunctionKey{code.filename, code.name, code.first_line}];
        if (std::exchange(leaf, false)) {
          ++f.own_window;
          f.own_ns += weight;
        }
        if (seen.insert(&f).second) {  // recursion counts once
          ++f.total_window;
          f.total_ns += weight;
        }
      }
    }
  }

  void housekeeping(int64_t t) {
    // The launched command: reaped here, its status kept.
    if (launched_) {
      int status = 0;
      pid_t r = ::waitpid(target_, &status, WNOHANG);
      if (r == target_) {
        std::lock_guard lock(mutex_);
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        status_ = WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                    : fmt::format("killed by signal {}", WTERMSIG(status));
        finished_ = true;
        return;
      }
    } else if (!launch::is_running(target_)) {
      std::lock_guard lock(mutex_);
      status_ = "exited";
      finished_ = true;
      return;
    }
    std::set<pid_t> wanted{target_};
    if (options_.subprocesses && t >= next_scan_ns_) {
      next_scan_ns_ = t + 1'000'000'000;
      for (pid_t p : descendants(target_)) wanted.insert(p);
    }
    for (pid_t p : wanted) {
      {
        std::lock_guard lock(mutex_);
        if (processes_.contains(p) || t < retry_ns_[p]) continue;
      }
      auto process = pyframes::PythonProcess::attach(p);
      std::lock_guard lock(mutex_);
      if (!process.ok()) {
        retry_ns_[p] = t + (p == target_ ? 100'000'000 : 2'000'000'000);
        continue;
      }
      if (p == target_) python_ = (*process)->version().str();
      processes_[p] = std::move(process).value();
    }
    {
      std::lock_guard lock(mutex_);
      status_ = processes_.empty() ? "waiting for a Python interpreter" : "running";
    }
    if (steps_) {
      steps_->on_housekeeping(t);
      read_markers();
    }
  }

  void read_markers() {
    if (markers_fd_ < 0) {
      markers_fd_ = ::open((markers_dir_.path() / store::kMarkersLog).c_str(), O_RDONLY | O_CLOEXEC);
      if (markers_fd_ < 0) return;
    }
    std::vector<store::Marker> markers;
    char buffer[65536];
    for (;;) {
      ssize_t n = ::read(markers_fd_, buffer, sizeof buffer);
      if (n <= 0) break;
      parser_.feed(std::string_view(buffer, size_t(n)), markers);
    }
    std::lock_guard lock(mutex_);
    for (const store::Marker& m : markers) {
      if (m.pid != target_ && !options_.subprocesses) continue;
      if (const auto* b = std::get_if<store::StepBegin>(&m.data)) {
        step_ = b->step;
        mode_ = std::string(to_string(b->mode));
        step_times_.push_back(m.t_ns);
      } else if (const auto* c = std::get_if<store::ModeChange>(&m.data)) {
        mode_ = std::string(to_string(c->mode));
      }
    }
  }

  TopOptions options_;
  pid_t target_ = 0;
  bool launched_ = false;
  int64_t start_ns_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};

  // Housekeeping only.
  std::unique_ptr<bootstrap::StepRecordHook> steps_;
  TempDir markers_dir_;  // the step markers of a command top started
  int markers_fd_ = -1;
  store::MarkerParser parser_;
  int64_t next_scan_ns_ = 0;

  mutable std::mutex mutex_;
  std::map<pid_t, std::unique_ptr<pyframes::PythonProcess>> processes_;
  std::map<pid_t, int64_t> retry_ns_;
  std::map<FunctionKey, FunctionStats> functions_;
  std::string python_;
  std::string status_ = "starting";
  int threads_ = 0;
  uint64_t samples_ = 0;
  uint64_t window_samples_ = 0;
  std::optional<int64_t> step_;
  std::string mode_;
  std::deque<int64_t> step_times_;
  std::optional<int> exit_status_;
  int64_t last_view_ns_ = 0;
  int64_t last_cpu_ticks_ = 0;
  std::unique_ptr<sysmon::GpuProbe> gpus_;

};

}  // namespace

Result<std::unique_ptr<TopSession>> TopSession::start(const TopOptions& options) {
  if (options.pid != 0 && !options.command.empty()) {
    return make_error(ErrorKind::usage, "top: give --pid PID or a command, not both");
  }
  if (options.pid == 0 && options.command.empty()) {
    return make_error(ErrorKind::usage, "top: give a command to run (sprof top python3 train.py) or --pid PID");
  }
  if (!(options.rate_hz >= 1 && options.rate_hz <= 10000)) {
    return make_error(ErrorKind::usage, "--rate {}: give 1 to 10000 samples a second", options.rate_hz);
  }
  auto session = std::make_unique<Session>(options);
  SPROF_TRY_STATUS(session->launch());
  return std::unique_ptr<TopSession>(std::move(session));
}

}  // namespace sprof::live
