// The record hook of the per-step traces: follows markers/markers.log as the bootstrap's drain
// appends to it, and writes each closed window's Chrome trace on a thread of its own, so the
// sampling thread never waits for a trace.

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <set>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/clock.hpp"
#include "sprof/layout.hpp"
#include "sprof/trace_windows.hpp"
#include "traces/window_trace.hpp"

namespace fs = std::filesystem;

namespace sprof::traces {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kPollNs = 100 * kMs;
// The sample logs are flushed every second and libsprof_cupti.so's writer flushes every second;
// a window's trace waits this long after its end so both hold the whole window.
constexpr int64_t kSettleNs = 2'500 * kMs;

class TraceWindowsHook final : public launch::RecordHooks {
 public:
  TraceWindowsHook(TraceWindowsOptions options, NameTemplate folder, NameTemplate filename)
      : options_(std::move(options)),
        folder_(std::move(folder)),
        filename_(std::move(filename)),
        tracker_(options_.schedule) {}

  ~TraceWindowsHook() override { stop_worker(); }

  void on_start(const launch::RecordContext& context) override {
    dir_ = context.output_dir;
    run_name_ = options_.run_name;
    if (run_name_.empty()) {
      fs::path name = dir_.lexically_normal();
      run_name_ = (name.has_filename() ? name.filename() : name.parent_path().filename()).string();
    }
    worker_ = std::thread([this] { run(); });
  }

  void on_housekeeping(int64_t now_ns) override {
    if (now_ns < next_poll_ns_) return;
    next_poll_ns_ = now_ns + kPollNs;
    poll_markers(now_ns + kSettleNs);
  }

  std::string cost_name() const override { return "trace_windows"; }

  Status on_finish(const fs::path& /*output_dir*/, store::Manifest& manifest) override {
    // The bootstrap's on_finish drained the pipe: the log is whole now.
    poll_markers(0);
    std::vector<TraceWindow> last;
    for (const store::ManifestProcess& p : manifest.processes) {
      tracker_.process_ended(p.pid, p.detach_ns, last);
    }
    tracker_.finish(manifest.end_ns, last);
    enqueue(std::move(last), 0);
    {
      std::lock_guard lock(mu_);
      final_manifest_ = manifest;
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    manifest.extra.emplace_back(kTraceWindowsSection, section().dump());
    return {};
  }

 private:
  struct Job {
    TraceWindow window;
    int64_t due_ns = 0;
  };

  void poll_markers(int64_t due_ns) {
    if (fd_ < 0) {
      fd_ = ::open((dir_ / store::kMarkersLog).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) return;  // no bootstrap (--no-inject), or nothing sent yet
    }
    std::vector<store::Marker> markers;
    std::array<char, 65536> buffer;
    for (;;) {
      ssize_t n = ::read(fd_, buffer.data(), buffer.size());
      if (n <= 0) break;
      parser_.feed(std::string_view(buffer.data(), static_cast<size_t>(n)), markers);
    }
    std::vector<TraceWindow> closed;
    for (const store::Marker& m : markers) {
      if (!environments_.contains(m.pid)) {
        TraceVariables ranks;
        ranks_from_environment(rank_environment(m.pid), ranks);
        environments_.emplace(m.pid, ranks);
      }
      tracker_.add(m, closed);
    }
    enqueue(std::move(closed), due_ns);
  }

  void enqueue(std::vector<TraceWindow> windows, int64_t due_ns) {
    if (windows.empty()) return;
    {
      std::lock_guard lock(mu_);
      for (TraceWindow& w : windows) {
        auto env = environments_.find(w.pid);
        if (env != environments_.end()) {
          w.vars.rank = env->second.rank;
          w.vars.local_rank = env->second.local_rank;
          w.vars.world_size = env->second.world_size;
          w.vars.local_world_size = env->second.local_world_size;
          w.vars.node_rank = env->second.node_rank;
        }
        w.vars.run_name = run_name_;
        jobs_.push_back(Job{std::move(w), due_ns});
      }
    }
    cv_.notify_all();
  }

  // Whether `path` falls on what record itself writes in the profile directory.
  bool sprofs_own(const fs::path& path) const {
    fs::path rel = path.lexically_normal().lexically_relative(dir_.lexically_normal());
    if (rel.empty() || rel.native().starts_with("..")) return false;
    static const std::set<std::string> own = {"sprof.json", "markers", "samples", "system", "framework", "gpu",
                                              "rule-output", "sprof-generation.json"};
    return own.contains(rel.begin()->string());
  }

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (jobs_.empty()) {
        if (stopping_) break;
        cv_.wait(lock);
        continue;
      }
      int64_t wait_ns = stopping_ ? 0 : jobs_.front().due_ns - monotonic_ns();
      if (wait_ns > 0) {
        cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
        continue;
      }
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      const store::Manifest* manifest = final_manifest_ ? &*final_manifest_ : nullptr;
      lock.unlock();
      write(job.window, manifest);
      lock.lock();
    }
    worker_cpu_s_ = double(thread_cpu_ns()) / 1e9;
  }

  void write(const TraceWindow& w, const store::Manifest* manifest) {
    fs::path folder = folder_.expand(w.vars);
    if (folder.is_relative()) folder = dir_ / folder;
    fs::path path = folder / filename_.expand(w.vars);
    if (options_.gzip) path += ".gz";
    std::string steps = w.first_step == w.vars.step ? fmt::format("step {}", w.vars.step)
                                                    : fmt::format("steps {}-{}", w.first_step, w.vars.step);
    Result<report::ChromeTraceCounts> counts = sprofs_own(path) ? Result<report::ChromeTraceCounts>(make_error(
                                                              ErrorKind::usage, "{} is one of the profile's own files or "
                                                              "folders (give another --trace-folder or --trace-filename)",
                                                              path.string()))
                                                        : write_window_trace(dir_, w, manifest, path, options_.gzip,
                                                                             options_.overwrite);
    if (!counts.ok()) {
      std::string problem = fmt::format("trace of pid {} {}: not written: {}", w.pid, steps, counts.error().message);
      spdlog::warn("{}", problem);
      problems_.push_back(std::move(problem));
      return;
    }
    spdlog::info("trace of pid {} {}{}: {} ({} events)", w.pid, steps, w.complete ? "" : " (cut by the process's end)",
                 path.string(), counts->events);
    files_.push_back(nlohmann::json{{"path", relative_name(path)},
                                    {"pid", w.pid},
                                    {"rank", w.vars.rank},
                                    {"first_step", w.first_step},
                                    {"last_step", w.vars.step},
                                    {"mode", w.vars.mode},
                                    {"epoch", w.vars.epoch},
                                    {"batch", w.vars.batch},
                                    {"complete", w.complete},
                                    {"start_us", double(w.begin_ns) / 1e3},
                                    {"end_us", double(w.end_ns) / 1e3},
                                    {"events", counts->events}});
    kept_.push_back(path);
    ++written_;
    // Composer's torch_trace_num_traces_to_keep: the oldest go first.
    while (options_.keep >= 0 && kept_.size() > static_cast<size_t>(options_.keep)) {
      std::error_code ec;
      fs::remove(kept_.front(), ec);
      if (!ec) ++deleted_;
      std::string gone = relative_name(kept_.front());
      for (auto& f : files_) {
        if (f["path"] == gone) f["deleted"] = true;
      }
      kept_.pop_front();
    }
  }

  std::string relative_name(const fs::path& path) const {
    std::error_code ec;
    fs::path rel = fs::relative(path, dir_, ec);
    if (ec || rel.empty() || *rel.begin() == "..") return path.string();
    return rel.string();
  }

  nlohmann::json section() const {
    const TraceSchedule& s = options_.schedule;
    return nlohmann::json{
        {"schedule",
         {{"skip_first", s.skip_first}, {"wait", s.wait}, {"warmup", s.warmup}, {"active", s.active}, {"repeat", s.repeat}}},
        {"folder", folder_.text()},
        {"filename", filename_.text()},
        {"gzip", options_.gzip},
        {"keep", options_.keep},
        {"run_name", run_name_},
        {"written", written_},
        {"deleted", deleted_},
        {"files", files_},
        {"problems", problems_},
        {"writer_cpu_s", worker_cpu_s_}};
  }

  void stop_worker() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  TraceWindowsOptions options_;
  NameTemplate folder_;
  NameTemplate filename_;
  fs::path dir_;
  std::string run_name_;

  // Sampling thread only.
  ScheduleTracker tracker_;
  store::MarkerParser parser_;
  int fd_ = -1;
  int64_t next_poll_ns_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::map<int32_t, TraceVariables> environments_;  // the ranks of each pid seen; sampling thread, then on_finish
  std::optional<store::Manifest> final_manifest_;
  bool stopping_ = false;
  std::thread worker_;

  // Worker thread only (read after the join).
  std::vector<nlohmann::json> files_;
  std::deque<fs::path> kept_;
  std::vector<std::string> problems_;
  int64_t written_ = 0;
  int64_t deleted_ = 0;
  double worker_cpu_s_ = 0;
};

}  // namespace

Result<std::unique_ptr<launch::RecordHooks>> make_trace_windows_hook(const TraceWindowsOptions& options) {
  SPROF_TRY(NameTemplate folder, NameTemplate::parse(options.folder, "--trace-folder"));
  SPROF_TRY(NameTemplate filename, NameTemplate::parse(options.filename, "--trace-filename"));
  if (options.filename.empty()) return make_error(ErrorKind::usage, "--trace-filename: empty");
  if (options.keep == 0 || options.keep < -1) {
    return make_error(ErrorKind::usage, "--trace-keep {}: give the number of traces to keep (>= 1), or -1 for all",
                      options.keep);
  }
  return std::unique_ptr<launch::RecordHooks>(
      std::make_unique<TraceWindowsHook>(options, std::move(folder), std::move(filename)));
}

Result<std::unique_ptr<launch::RecordHooks>> trace_windows_hook(std::string_view schedule, TraceWindowsOptions options) {
  if (schedule.empty()) return std::unique_ptr<launch::RecordHooks>();
  SPROF_TRY(options.schedule, parse_trace_schedule(schedule));
  if (options.run_name.empty()) {
    if (const char* env = std::getenv("RUN_NAME"); env != nullptr) options.run_name = env;
  }
  return make_trace_windows_hook(options);
}

std::string trace_windows_summary(const store::Manifest& manifest, const fs::path& profile_dir) {
  for (const auto& [key, json_text] : manifest.extra) {
    if (key != kTraceWindowsSection) continue;
    auto section = nlohmann::json::parse(json_text, nullptr, false);
    if (!section.is_object()) return {};
    int64_t written = section.value("written", int64_t{0});
    int64_t deleted = section.value("deleted", int64_t{0});
    auto problems = section.value("problems", std::vector<std::string>{});
    std::string where;
    for (const auto& f : section.value("files", nlohmann::json::array())) {
      if (f.value("deleted", false)) continue;
      fs::path path(f.value("path", std::string()));
      where = (path.is_relative() ? profile_dir / path : path).parent_path().string();
    }
    std::string text = written == 0 ? std::string("no step trace written (the schedule's windows never came)")
                                     : fmt::format("{} step trace{}{}{}", written, written == 1 ? "" : "s",
                                                   where.empty() ? "" : " in " + where,
                                                   deleted > 0 ? fmt::format(" ({} deleted by --trace-keep)", deleted) : "");
    if (!problems.empty()) text += fmt::format("; {} not written (above)", problems.size());
    return text;
  }
  return {};
}

}  // namespace sprof::traces
