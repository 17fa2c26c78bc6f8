// sprof record: sample a command (or a running process) and write a profile directory.

#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "fail_on.hpp"
#include "record_flags.hpp"
#include "sprof/record_render.hpp"
#include "sprof/recorder.hpp"
#include "sprof/s3.hpp"

namespace sprof::cli {
namespace {

// Companion options given without the one they need: a usage error naming the first.
Status given_only_with(const CLI::App& sub, std::initializer_list<const char*> companions, std::string_view needed) {
  for (const char* name : companions) {
    if (sub.count(name) > 0) return make_error(ErrorKind::usage, "{} needs {}", name, needed);
  }
  return {};
}

// --rule/--rules, --rule-file/--rule-program and --action: the hook, or nothing without a rule.
// `custom` holds the custom rules' files (sprof's Python package) while the hook lives.
Result<std::unique_ptr<watch::RuleWatch>> rule_watch(const RecordFlags& flags, const CLI::App& sub,
                                                     std::unique_ptr<rules::CustomRuleSet>& custom) {
  SPROF_TRY(custom, rules::CustomRuleSet::load(flags.custom));
  watch::RuleWatchOptions options = flags.watch;
  options.custom = custom->rules();
  if (options.watches_any()) return watch::RuleWatch::create(options);
  SPROF_TRY_STATUS(given_only_with(sub, {"--action", "--rule-interval", "--stop-grace", "--fail-on", "--rule-timeout"},
                                   "--rule, --rules or --rule-file"));
  return std::unique_ptr<watch::RuleWatch>();
}

}  // namespace

void add_record(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<RecordFlags>();
  auto python_flags = std::make_shared<PythonProfilingFlags>();
  CLI::App* sub = app.add_subcommand(
      "record", "Run a command (after --) or attach to --pid, sample its Python stacks, write a profile directory");
  add_record_flags(sub, *flags, *python_flags);

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
    plan.stats_progress = render::stats_directories_progress(progress_shown());

    if (flags->trace_schedule.empty()) {
      SPROF_TRY_STATUS(given_only_with(*sub, {"--trace-folder", "--trace-filename", "--trace-gzip", "--trace-keep",
                                              "--trace-overwrite", "--run-name"}, "--trace-schedule"));
    }
    SPROF_TRY(std::unique_ptr<launch::RecordHooks> trace_windows,
              traces::trace_windows_hook(flags->trace_schedule, flags->traces));

    render::RecordStatusLine status;
    std::vector<launch::RecordHooks*> observers;
    if (progress_shown()) observers.push_back(&status);
    if (trace_windows) observers.push_back(trace_windows.get());
    if (upload) observers.push_back(upload.get());
    std::unique_ptr<rules::CustomRuleSet> custom_rules;
    SPROF_TRY(std::unique_ptr<watch::RuleWatch> watching, rule_watch(*flags, *sub, custom_rules));
    if (watching) observers.push_back(watching.get());
    auto recording = recorder::record(plan, observers);
    status.clear();
    if (!recording.ok()) return std::move(recording).error();
    const launch::RecordResult* result = &recording->result;
    if (result->output_dir.empty()) return result->exit_code;  // the command could not be started
    if (!global_options().quiet) {
      fmt::print(stderr, "{}", render::record_closing_text(*recording, flags->time.view(), flags->gil,
                                                           traces::trace_windows_summary(result->manifest, result->output_dir)));
    }
    int exit_code = result->exit_code;
    if (watching && !flags->fail_on.empty() && exit_code == 0) {
      SPROF_TRY(auto fail_on, rules::parse_fail_on(flags->fail_on, watching->final_results()));
      exit_code = fail_on_exit_code(watching->final_results(), fail_on, flags->fail_on);
    }
    if (upload) {
      remote::LiveUploadResult up = upload->finish();
      if (!global_options().quiet || !up.not_uploaded.empty()) fmt::print(stderr, "{}", render::upload_closing_text(up));
      if (!up.not_uploaded.empty() && exit_code == 0) exit_code = 1;
    }
    return exit_code;
  }});
}

}  // namespace sprof::cli
