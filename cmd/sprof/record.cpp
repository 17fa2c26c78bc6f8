// sprof record: sample a command (or a running process) and write a profile directory.

#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "custom_rule_flags.hpp"
#include "option_checks.hpp"
#include "progress_line.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/python_profiling.hpp"
#include "sprof/record_render.hpp"
#include "sprof/recorder.hpp"
#include "sprof/sample_report.hpp"
#include "sprof/step_timeline.hpp"
#include "fail_on.hpp"
#include "sprof/rule_watch.hpp"
#include "sprof/s3.hpp"
#include "sprof/sysmon.hpp"
#include "sprof/trace_windows.hpp"
#include "window_flags.hpp"

namespace sprof::cli {
namespace {

struct RecordFlags {
  launch::RecordOptions options;
  bool blocking = false;
  bool nonblocking = false;
  bool idle = false;
  bool on_cpu = false;
  bool all_threads = false;
  bool gil = false;
  std::string output;
  // System metrics (sysmon): smdebug's ProfilingIntervalInMilliseconds, or off.
  int system_interval_ms = sysmon::kDefaultIntervalMs;
  bool no_system_metrics = false;
  bootstrap::StepHookOptions steps;  // --step-fn
  bool no_inject = false;
  bool no_torch = false;
  std::string python_timer = "total_time";  // per-interval stats directories
  std::string gpu = "auto";
  std::string cupti;
  // Per-step Chrome traces on a schedule, named like Composer's profiler's.
  std::string trace_schedule;
  traces::TraceWindowsOptions traces;
  double upload_interval_s = 10;  // -o s3://...
  // Rules while the job runs.
  std::vector<std::string> rules;
  std::vector<std::string> actions;
  watch::RuleWatchOptions watch;
  CustomRuleFlags custom;
  std::string fail_on;
};

// --rule/--rules, --rule-file/--rule-program and --action: the hook, or nothing without a rule.
// `custom` holds the custom rules' files (sprof's Python package) while the hook lives.
Result<std::unique_ptr<watch::RuleWatch>> rule_watch(const RecordFlags& flags, const CLI::App& sub,
                                                     std::unique_ptr<CustomRuleSet>& custom) {
  SPROF_TRY(custom, CustomRuleSet::load(flags.custom));
  if (flags.rules.empty() && custom->rules().empty()) {
    for (const char* name : {"--action", "--rule-interval", "--stop-grace", "--fail-on", "--rule-timeout"}) {
      if (sub.count(name) > 0) return make_error(ErrorKind::usage, "{} needs --rule, --rules or --rule-file", name);
    }
    return std::unique_ptr<watch::RuleWatch>();
  }
  watch::RuleWatchOptions options = flags.watch;
  options.custom = custom->rules();
  for (const std::string& r : flags.rules) SPROF_TRY_STATUS(watch::parse_rule_flag(r, options));
  for (const std::string& a : flags.actions) SPROF_TRY_STATUS(watch::parse_action_flag(a, options));
  return watch::RuleWatch::create(options);
}

// --trace-schedule and its companions: the hook, or nothing without a schedule.
Result<std::unique_ptr<launch::RecordHooks>> trace_windows_hook(const RecordFlags& flags, const CLI::App& sub) {
  if (flags.trace_schedule.empty()) {
    for (const char* name : {"--trace-folder", "--trace-filename", "--trace-gzip", "--trace-keep", "--trace-overwrite",
                             "--run-name"}) {
      if (sub.count(name) > 0) return make_error(ErrorKind::usage, "{} needs --trace-schedule", name);
    }
    return std::unique_ptr<launch::RecordHooks>();
  }
  traces::TraceWindowsOptions options = flags.traces;
  SPROF_TRY(options.schedule, traces::parse_trace_schedule(flags.trace_schedule));
  if (options.run_name.empty()) {
    if (const char* env = std::getenv("RUN_NAME"); env != nullptr) options.run_name = env;
  }
  return traces::make_trace_windows_hook(options);
}

// One status line on a terminal, rewritten in place.
class StatusLine : public launch::RecordHooks {
 public:
  void on_progress(const launch::RecordProgress& p) override {
    double share = p.samples + p.invalid == 0 ? 0.0 : 100.0 * double(p.invalid) / double(p.samples + p.invalid);
    fmt::print(stderr, "\rsprof: {:.1f} s, {} samples, {} process{}, {} thread{}, {:.1f}% invalid\x1b[K", p.elapsed_s,
               p.samples, p.processes, p.processes == 1 ? "" : "es", p.threads, p.threads == 1 ? "" : "s", share);
    std::fflush(stderr);
    shown_ = true;
  }
  Status on_finish(const std::filesystem::path&, store::Manifest&) override {
    clear();
    return {};
  }
  void clear() {
    if (shown_) fmt::print(stderr, "\r\x1b[K");
    shown_ = false;
  }

 private:
  bool shown_ = false;
};

void print_summary(const launch::RecordResult& result, const RecordFlags& flags) {
  auto profile = store::load_profile_samples(result.output_dir);
  if (!profile.ok()) {
    spdlog::warn("cannot read back the profile for the summary: {}", profile.error().message);
    return;
  }
  report::TimeView view{flags.on_cpu, flags.all_threads || flags.idle};
  query::SampleFilter filter = report::time_view_filter(view, *profile);
  filter.gil_only = flags.gil;
  report::SampleSummary summary = report::summarize(*profile, filter, 10);
  std::string what = view.describe() + (flags.gil ? ", GIL holders" : "");
  fmt::print(stderr, "{}", render::record_summary_text(result.manifest, summary, what));
}

// --- Profiling windows and deterministic mode (--python-profiler cprofile) ---------------------

struct PythonProfilingFlags {
  std::string profiler;  // "" = sampling unless --profiler-config names one
  std::string timer;     // "" = the config's cProfileTimer, else total_time
  WindowFlags window;
  std::string config_file;
};

// What record does about python stats: the window, the profiler, the cProfile timer.
void add_python_profiling_flags(CLI::App* sub, PythonProfilingFlags& f) {
  sub->add_option("--python-profiler", f.profiler,
                  "How per-interval python stats are made: sampling (default) or cprofile (cProfile inside the "
                  "target, exact call counts)")
      ->check(CLI::IsMember({"sampling", "cprofile"}));
  sub->add_option("--cprofile-timer", f.timer,
                  "cProfile's clock in cprofile mode: total_time (default), cpu_time, off_cpu_time or default "
                  "(smdebug's cycle over steps 9-11)")
      ->check(CLI::IsMember({"total_time", "cpu_time", "off_cpu_time", "default"}));
  add_window_flags(sub, f.window);
  sub->add_option("--profiler-config", f.config_file,
                  "smdebug profilerconfig.json: PythonProfilingConfig's window, ProfilerName and cProfileTimer");
}

// The flags as a request: unset values come from --profiler-config, then the defaults.
Result<window::PythonProfilingRequest> python_profiling_request(const PythonProfilingFlags& f) {
  window::PythonProfilingRequest request;
  SPROF_TRY(request.window, window_from_flags(f.window));
  if (!f.profiler.empty()) request.profiler = window::parse_python_profiler(f.profiler);
  if (!f.timer.empty()) request.timer = window::parse_cprofile_timer(f.timer);
  request.config_file = f.config_file;
  return request;
}

}  // namespace

void add_record(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<RecordFlags>();
  CLI::App* sub = app.add_subcommand(
      "record", "Run a command (after --) or attach to --pid, sample its Python stacks, write a profile directory");
  sub->add_option("-r,--rate", flags->options.rate_hz, "Samples per second (exponentially jittered)")
      ->capture_default_str()
      ->check(finite_in(1.0, 100000.0));
  sub->add_option("-d,--duration", flags->options.duration_s, "Stop sampling after this many seconds (default: until the target exits)")
      ->check(finite_positive(kMaxDurationS));
  sub->add_option("-p,--pid", flags->options.attach_pid, "Attach to this running process instead of starting a command")
      ->check(CLI::PositiveNumber);
  sub->add_option("-o,--output", flags->output,
                  "Profile directory (default: sprof-<pid>-<UTC time>), or s3://bucket/prefix: recorded into the "
                  "default local directory and uploaded there while the job runs");
  sub->add_option("--upload-interval", flags->upload_interval_s,
                  "With -o s3://...: upload what was recorded every this many seconds")
      ->check(finite_in(1.0, 3600.0))
      ->capture_default_str();
  sub->add_flag("--force", flags->options.force, "Replace an existing profile directory");
  sub->add_flag("--subprocesses", flags->options.subprocesses, "Also sample descendant processes (DataLoader workers, spawn, torchrun)");
  sub->add_flag("--on-cpu", flags->on_cpu, "The summary's functions by on-CPU time only (default: wall time)");
  sub->add_flag("--all-threads", flags->all_threads,
                "The summary's functions of every thread (default: the threads that run steps)");
  sub->add_flag("--idle", flags->idle, "Old spelling of --all-threads in the summary");
  sub->add_flag("--gil", flags->gil, "Only count threads holding the GIL in the summary");
  auto* blocking = sub->add_flag("--blocking", flags->blocking, "Pause Python threads while reading their stacks");
  auto* nonblocking =
      sub->add_flag("--nonblocking", flags->nonblocking, "Read stacks without pausing the target (the default)");
  blocking->excludes(nonblocking);
  // System metrics.
  sub->add_option("--system-interval-ms", flags->system_interval_ms,
                  "System metrics interval: 100, 200, 500, 1000, 5000 or 60000 ms")
      ->capture_default_str();
  sub->add_flag("--no-system-metrics", flags->no_system_metrics, "Do not write system metrics (system/)");
  // Steps: from the injected bootstrap, or --step-fn.
  sub->add_flag("--no-inject", flags->no_inject,
                "Do not inject sprof's bootstrap (no step markers, no PyTorch detection, `import sprof` is a no-op)");
  sub->add_flag("--no-torch", flags->no_torch, "Inject the bootstrap but leave PyTorch alone (explicit sprof API only)");
  sub->add_option("--step-fn", flags->steps.step_functions,
                  "Every call of this function is one step: NAME (found at its first call), Class.method, "
                  "module:function or module:Class.method (wrapped when the module is imported); repeatable. "
                  "Without the bootstrap (--pid, --no-inject) steps are inferred from the samples instead")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--step-fn-mode", flags->steps.step_fn_mode,
                  "The mode of --step-fn's steps where no torch module's .training tells it")
      ->check(CLI::IsMember({"train", "eval", "predict", "global"}))
      ->capture_default_str();
  auto python_flags = std::make_shared<PythonProfilingFlags>();
  add_python_profiling_flags(sub, *python_flags);
  sub->add_option("--python-timer", flags->python_timer,
                  "Samples the per-interval python_stats count: total_time (all), cpu_time (on-CPU), "
                  "off_cpu_time (idle)")
      ->check(CLI::IsMember({"total_time", "cpu_time", "off_cpu_time"}))
      ->capture_default_str();
  sub->add_option("--gpu", flags->gpu,
                  "GPU tracing with CUPTI: auto (on when sprof was built with CUPTI), on (an error without it) or "
                  "off. Sets CUDA_INJECTION64_PATH for the command unless another tool (nsys) already has")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  sub->add_option("--cupti", flags->cupti,
                  "The libcupti for the command's CUDA processes, unless one is loaded there already (default: "
                  "the one a CUDA build of torch ships, else the system's)");
  sub->add_option("--trace-schedule", flags->trace_schedule,
                  "Write Chrome traces of some training steps while the job runs, on torch.profiler's schedule: "
                  "wait=W,warmup=U,active=A,repeat=R,skip_first=S (any of them; default wait=0,warmup=1,active=4,"
                  "repeat=1,skip_first=0, Composer's). repeat=0 repeats forever");
  sub->add_option("--trace-folder", flags->traces.folder,
                  "Folder of the step traces, relative to the profile directory unless absolute; a template as "
                  "--trace-filename's")
      ->capture_default_str();
  sub->add_option("--trace-filename", flags->traces.filename,
                  "Name of each step trace, Composer's variables in Python's format syntax: {run_name} {rank} "
                  "{local_rank} {world_size} {local_world_size} {node_rank} {epoch} {batch} {batch_in_epoch} {step} "
                  "{mode} {pid}")
      ->capture_default_str();
  sub->add_flag("--trace-gzip", flags->traces.gzip, "Compress each step trace (the name gets .gz)");
  sub->add_option("--trace-keep", flags->traces.keep, "Keep the newest N step traces, delete older ones (-1: all)")
      ->capture_default_str();
  sub->add_flag("--trace-overwrite", flags->traces.overwrite,
                "Replace a step trace file that exists (else it is kept and the window is not written)");
  sub->add_option("--run-name", flags->traces.run_name,
                  "{run_name} in the step traces' names (default: $RUN_NAME, else the profile directory's name)");
  // Rules while the job runs.
  sub->add_option("--rule", flags->rules,
                  "Evaluate this rule on the data recorded so far every --rule-interval seconds and at the end "
                  "(NAME[:param=value,...]; repeatable; 'all' for ProfilerReport's eleven)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--rules", flags->rules, "Same as --rule (--rules all)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--rule-interval", flags->watch.interval_s, "Seconds between rule evaluations")
      ->capture_default_str()
      ->check(finite_in(1.0, 86400.0));
  sub->add_option("--action", flags->actions,
                  "What a rule's new finding does: RULE=stop (end the job: SIGINT, SIGTERM and SIGKILL after "
                  "--stop-grace), RULE=exec:COMMAND (run a notifier) or RULE=log; repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--stop-grace", flags->watch.stop_grace_s, "Seconds between the signals of a stop action")
      ->capture_default_str()
      ->check(finite_in(0.1, 3600.0));
  add_custom_rule_flags(sub, flags->custom);
  sub->add_option("--fail-on", flags->fail_on,
                  "Exit 3 when the command succeeded but one of these rules (any, or RULE[,RULE...]) found issues "
                  "at the end");
  accept_command(sub);

  commands.push_back({sub, [flags, python_flags, sub]() -> Result<int> {
    recorder::RecordPlan plan;
    plan.launch = flags->options;
    plan.launch.command = global_options().command;
    plan.launch.blocking = flags->blocking;
    plan.launch.output_dir = flags->output;
    std::unique_ptr<remote::LiveUpload> upload;
    if (remote::is_s3_url(flags->output)) {
      SPROF_TRY(upload, remote::LiveUpload::create(flags->output, launch::node_host(), s3_options(), flags->upload_interval_s));
      plan.launch.output_dir.clear();  // the local copy: the default directory
    } else if (sub->count("--upload-interval") > 0) {
      return make_error(ErrorKind::usage, "--upload-interval needs -o s3://bucket/prefix");
    }
    SPROF_TRY(window::PythonProfilingRequest request, python_profiling_request(*python_flags));
    SPROF_TRY(plan.python, window::plan_python_profiling(request));
    if (!flags->no_system_metrics) plan.system_interval_ms = flags->system_interval_ms;
    SPROF_TRY(gpu::GpuMode gpu_mode, gpu::parse_gpu_mode(flags->gpu));
    SPROF_TRY(plan.gpu, gpu::plan_gpu(gpu_mode, flags->cupti));
    plan.steps = flags->steps;
    plan.steps.inject = !flags->no_inject;
    plan.steps.torch = !flags->no_torch;
    plan.stats_timer = *intervals::parse_python_timer(flags->python_timer);
    plan.stats_progress = stats_directories_progress();

    SPROF_TRY(std::unique_ptr<launch::RecordHooks> trace_windows, trace_windows_hook(*flags, *sub));

    StatusLine status;
    std::vector<launch::RecordHooks*> observers;
    if (!global_options().quiet && isatty(STDERR_FILENO) != 0) observers.push_back(&status);
    if (trace_windows) observers.push_back(trace_windows.get());
    if (upload) observers.push_back(upload.get());
    std::unique_ptr<CustomRuleSet> custom_rules;
    SPROF_TRY(std::unique_ptr<watch::RuleWatch> watching, rule_watch(*flags, *sub, custom_rules));
    if (watching) observers.push_back(watching.get());
    auto recording = recorder::record(plan, observers);
    status.clear();
    if (!recording.ok()) return std::move(recording).error();
    const launch::RecordResult* result = &recording->result;
    if (result->output_dir.empty()) return result->exit_code;  // the command could not be started
    if (!global_options().quiet) {
      if (result->sampled_any) print_summary(*result, *flags);
      if (std::string text = recording->steps.text(); !text.empty()) {
        fmt::print(stderr, "sprof: {}\n", text);
      } else if (result->sampled_any) {
        fmt::print(stderr, "sprof: {}\n", timeline::kNoStepsHint);
      }
      if (recording->interval_stats) fmt::print(stderr, "sprof: {}\n", recording->interval_stats->text());
      if (std::string text = traces::trace_windows_summary(result->manifest, result->output_dir); !text.empty()) {
        fmt::print(stderr, "sprof: {}\n", text);
      }
      if (result->write_errors.empty()) {
        fmt::print(stderr, "sprof: wrote {}\n", result->output_dir.string());
      } else {
        fmt::print(stderr,
                   "sprof: the profile in {} is incomplete: {} write{} failed (above); it reads up to the last "
                   "complete sample chunk, and `sprof stats-dirs {}` finishes it once there is room\n",
                   result->output_dir.string(), result->write_errors.size(),
                   result->write_errors.size() == 1 ? "" : "s", result->output_dir.string());
        if (result->manifest.exit_status) {
          fmt::print(stderr, "sprof: the command itself exited with status {}\n", *result->manifest.exit_status);
        }
      }
    }
    int exit_code = result->exit_code;
    if (watching && !flags->fail_on.empty() && exit_code == 0) {
      SPROF_TRY(auto fail_on, parse_fail_on(flags->fail_on, watching->final_results()));
      exit_code = fail_on_exit_code(watching->final_results(), fail_on, flags->fail_on);
    }
    if (upload) {
      remote::LiveUploadResult up = upload->finish();
      if (up.not_uploaded.empty()) {
        if (!global_options().quiet) fmt::print(stderr, "sprof: uploaded {} to {}\n", up.local_dir.string(), up.url);
      } else {
        for (const std::string& f : up.not_uploaded) fmt::print(stderr, "sprof: not uploaded: {}\n", f);
        fmt::print(stderr, "sprof: {} of {} files not uploaded to {}; the profile is whole in {}, and `sprof upload {} {}` "
                   "finishes the upload\n", up.not_uploaded.size(), up.files, up.url, up.local_dir.string(),
                   up.local_dir.string(), up.url);
        if (exit_code == 0) exit_code = 1;
      }
    }
    return exit_code;
  }});
}

}  // namespace sprof::cli
