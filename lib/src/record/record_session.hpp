#pragma once
// One recording: the processes it follows, what each tick of the sampling loop
// (sampler/sampling_loop) samples, and the profile it writes.
// Single-threaded: ticks, housekeeping (reaping, descendant discovery, attach retries, flushes,
// thread names, progress) and the hooks all run on the calling thread, so no locks are needed
// on the sampling path.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/signals.hpp"
#include "sampler/process_sampler.hpp"
#include "sampler/sampling_loop.hpp"
#include "sprof/pyframes.hpp"
#include "sprof/launch.hpp"

namespace sprof::recorder {

using launch::RecordHooks;
using launch::RecordOptions;
using launch::RecordProgress;
using launch::RecordResult;
using launch::SignalGuard;

using Attacher = std::function<Result<std::unique_ptr<pyframes::PythonProcess>>(pid_t)>;

class RecordSession {
 public:
  RecordSession(RecordOptions options, std::vector<RecordHooks*> hooks, Attacher attacher);
  ~RecordSession();
  // Runs a whole recording. Errors are returned for failures before anything was launched
  // (bad options, an existing output directory, an attach that failed); once the command runs,
  // problems are logged and recorded in the manifest, and the command's status is passed through.
  Result<RecordResult> run();

 private:
  struct Tracked {
    pid_t pid = 0;
    bool root = false;
    bool running = true;
    bool sampling = false;
    bool ever_attached = false;
    bool gave_up = false;
    int attempts = 0;
    int failures = 0;  // sample() errors while the process was alive (exec, odd reads)
    int64_t window_start_ns = 0;
    int64_t next_attempt_ns = 0;
    std::string exe;
    std::string image;  // image_identity() when attached: a change means it exec'd
    bool fork_copy = false;    // first attached as a fork of its parent (the same image), not exec'd yet
    bool left_python = false;  // exec'd (or became unreadable) and not re-attached since
    std::optional<Error> last_error;
    std::unique_ptr<sampler::ProcessSampler> sampler;
    store::ManifestProcess info;
  };

  // Both return a result only when recording ends before it began (the command could not run).
  Result<std::optional<RecordResult>> start_attach();
  Result<std::optional<RecordResult>> start_launch();
  void loop();
  bool tick(int64_t now_ns);  // whether any process was sampled
  void housekeeping(int64_t now_ns);
  // Calls hooks: at the thread's own priority once the sampling loop runs (SamplingLoop).
  void call_hooks(const std::function<void()>& fn);
  void reap_child();
  void discover(int64_t now_ns);
  void check_exec(int64_t now_ns);
  void try_attach(Tracked& t, int64_t now_ns, std::unique_ptr<pyframes::PythonProcess> ready = nullptr);
  void on_sample_error(Tracked& t, const Error& error, int64_t now_ns);
  void stop_sampling(Tracked& t, int64_t now_ns);
  Tracked& track(pid_t pid, bool root, int64_t now_ns);
  Tracked* find(pid_t pid);
  RecordProgress progress(int64_t now_ns) const;
  void write_manifest_now();
  void write_failed(const std::string& message);
  void add_costs_section();
  Result<RecordResult> finish();
  void wait_for_child();

  RecordOptions options_;
  std::vector<RecordHooks*> hooks_;
  Attacher attacher_;
  pyframes::SampleOptions sample_options_;

  std::filesystem::path dir_;
  std::string host_;
  store::Manifest manifest_;
  std::vector<std::unique_ptr<Tracked>> tracked_;
  pid_t child_ = 0;           // launch mode: the command, until reaped
  // Attach mode: the target, read before the hooks start and attached after them, so that its
  // sampling (attach_ns, the window's start) begins when the first tick can follow at once.
  std::unique_ptr<pyframes::PythonProcess> attach_ready_;
  std::optional<int> child_status_;
  bool stop_ = false;
  std::string stop_reason_;

  std::unique_ptr<SignalGuard> signals_;  // from run() until it returns
  std::unique_ptr<sampler::SamplingLoop> loop_;  // from the start of sampling
  int64_t start_ns_ = 0;
  int64_t deadline_ns_ = 0;
  int64_t last_tick_ns_ = 0;
  int64_t next_discovery_ns_ = 0;
  int64_t next_progress_ns_ = 0;
  std::vector<std::string> errors_;
  std::vector<std::string> write_errors_;

  // CPU time this thread spent in each hook (aligned with hooks_), and its CPU time when the
  // sampling loop began.
  struct HookCost {
    int64_t while_sampling_cpu_ns = 0;
    int64_t after_cpu_ns = 0;
    int64_t after_wall_ns = 0;
  };
  std::vector<HookCost> hook_costs_;
  int64_t session_cpu_start_ns_ = 0;
};

}  // namespace sprof::recorder
