// sprof record's flags, declared for CLI11.

#include "record_flags.hpp"

#include "command.hpp"
#include "custom_rule_flags.hpp"
#include "option_checks.hpp"
#include "query_args.hpp"

namespace sprof::cli {
namespace {

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

}  // namespace

Result<window::PythonProfilingRequest> python_profiling_request(const PythonProfilingFlags& f) {
  window::PythonProfilingRequest request;
  SPROF_TRY(request.window, window_from_flags(f.window));
  if (!f.profiler.empty()) request.profiler = window::parse_python_profiler(f.profiler);
  if (!f.timer.empty()) request.timer = window::parse_cprofile_timer(f.timer);
  request.config_file = f.config_file;
  return request;
}

void add_record_flags(CLI::App* sub, RecordFlags& flags, PythonProfilingFlags& python) {
  sub->add_option("-r,--rate", flags.options.rate_hz, "Samples per second (exponentially jittered)")
      ->capture_default_str()
      ->check(finite_in(1.0, 100000.0));
  sub->add_option("-d,--duration", flags.options.duration_s, "Stop sampling after this many seconds (default: until the target exits)")
      ->check(finite_positive(kMaxDurationS));
  sub->add_option("-p,--pid", flags.options.attach_pid, "Attach to this running process instead of starting a command")
      ->check(CLI::PositiveNumber);
  sub->add_option("-o,--output", flags.output,
                  "Profile directory (default: sprof-<pid>-<UTC time>), or s3://bucket/prefix: recorded into the "
                  "default local directory and uploaded there while the job runs");
  sub->add_option("--upload-interval", flags.upload_interval_s,
                  "With -o s3://...: upload what was recorded every this many seconds")
      ->check(finite_in(1.0, 3600.0))
      ->capture_default_str();
  sub->add_flag("--force", flags.options.force, "Replace an existing profile directory");
  sub->add_flag("--subprocesses", flags.options.subprocesses, "Also sample descendant processes (DataLoader workers, spawn, torchrun)");
  add_time_view_flags(sub, flags.time, "The summary's functions");
  sub->add_flag("--gil", flags.gil, "Only count threads holding the GIL in the summary");
  auto* blocking = sub->add_flag("--blocking", flags.blocking, "Pause Python threads while reading their stacks");
  auto* nonblocking =
      sub->add_flag("--nonblocking", flags.nonblocking, "Read stacks without pausing the target (the default)");
  blocking->excludes(nonblocking);
  // System metrics.
  sub->add_option("--system-interval-ms", flags.system_interval_ms,
                  "System metrics interval: 100, 200, 500, 1000, 5000 or 60000 ms")
      ->capture_default_str();
  sub->add_flag("--no-system-metrics", flags.no_system_metrics, "Do not write system metrics (system/)");
  // Steps: from the injected bootstrap, or --step-fn.
  sub->add_flag("--no-inject", flags.no_inject,
                "Do not inject sprof's bootstrap (no step markers, no PyTorch detection, `import sprof` is a no-op)");
  sub->add_flag("--no-torch", flags.no_torch, "Inject the bootstrap but leave PyTorch alone (explicit sprof API only)");
  sub->add_option("--step-fn", flags.steps.step_functions,
                  "Every call of this function is one step: NAME (found at its first call), Class.method, "
                  "module:function or module:Class.method (wrapped when the module is imported); repeatable. "
                  "Without the bootstrap (--pid, --no-inject) steps are inferred from the samples instead")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--step-fn-mode", flags.steps.step_fn_mode,
                  "The mode of --step-fn's steps where no torch module's .training tells it")
      ->check(CLI::IsMember({"train", "eval", "predict", "global"}))
      ->capture_default_str();
  add_python_profiling_flags(sub, python);
  sub->add_option("--python-timer", flags.python_timer,
                  "Samples the per-interval python_stats count: total_time (all), cpu_time (on-CPU), "
                  "off_cpu_time (idle)")
      ->check(CLI::IsMember({"total_time", "cpu_time", "off_cpu_time"}))
      ->capture_default_str();
  sub->add_option("--gpu", flags.gpu,
                  "GPU tracing with CUPTI: auto (on when sprof was built with CUPTI), on (an error without it) or "
                  "off. Sets CUDA_INJECTION64_PATH for the command unless another tool (nsys) already has")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  sub->add_option("--cupti", flags.cupti,
                  "The libcupti for the command's CUDA processes, unless one is loaded there already (default: "
                  "the one a CUDA build of torch ships, else the system's)");
  sub->add_option("--trace-schedule", flags.trace_schedule,
                  "Write Chrome traces of some training steps while the job runs, on torch.profiler's schedule: "
                  "wait=W,warmup=U,active=A,repeat=R,skip_first=S (any of them; default wait=0,warmup=1,active=4,"
                  "repeat=1,skip_first=0, Composer's). repeat=0 repeats forever");
  sub->add_option("--trace-folder", flags.traces.folder,
                  "Folder of the step traces, relative to the profile directory unless absolute; a template as "
                  "--trace-filename's")
      ->capture_default_str();
  sub->add_option("--trace-filename", flags.traces.filename,
                  "Name of each step trace, Composer's variables in Python's format syntax: {run_name} {rank} "
                  "{local_rank} {world_size} {local_world_size} {node_rank} {epoch} {batch} {batch_in_epoch} {step} "
                  "{mode} {pid}")
      ->capture_default_str();
  sub->add_flag("--trace-gzip", flags.traces.gzip, "Compress each step trace (the name gets .gz)");
  sub->add_option("--trace-keep", flags.traces.keep, "Keep the newest N step traces, delete older ones (-1: all)")
      ->capture_default_str();
  sub->add_flag("--trace-overwrite", flags.traces.overwrite,
                "Replace a step trace file that exists (else it is kept and the window is not written)");
  sub->add_option("--run-name", flags.traces.run_name,
                  "{run_name} in the step traces' names (default: $RUN_NAME, else the profile directory's name)");
  // Rules while the job runs.
  sub->add_option("--rule", flags.watch.rule_flags,
                  "Evaluate this rule on the data recorded so far every --rule-interval seconds and at the end "
                  "(NAME[:param=value,...]; repeatable; 'all' for ProfilerReport's eleven)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--rules", flags.watch.rule_flags, "Same as --rule (--rules all)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--rule-interval", flags.watch.interval_s, "Seconds between rule evaluations")
      ->capture_default_str()
      ->check(finite_in(1.0, 86400.0));
  sub->add_option("--action", flags.watch.action_flags,
                  "What a rule's new finding does: RULE=stop (end the job: SIGINT, SIGTERM and SIGKILL after "
                  "--stop-grace), RULE=exec:COMMAND (run a notifier) or RULE=log; repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--stop-grace", flags.watch.stop_grace_s, "Seconds between the signals of a stop action")
      ->capture_default_str()
      ->check(finite_in(0.1, 3600.0));
  add_custom_rule_flags(sub, flags.custom);
  sub->add_option("--fail-on", flags.fail_on,
                  "Exit 3 when the command succeeded but one of these rules (any, or RULE[,RULE...]) found issues "
                  "at the end");
  accept_command(sub);
}

}  // namespace sprof::cli
