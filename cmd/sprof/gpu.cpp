// sprof gpu PATH VIEW: GPU summaries of a profile directory or a Chrome (kineto) trace file.

#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "output_format.hpp"
#include "query_args.hpp"
#include "sprof/gpu_render.hpp"
#include "sprof/gpu_report.hpp"

namespace sprof::cli {
namespace {

struct GpuFlags {
  ProfileArgument path;
  std::string view;
  int device = -1;
  query::RunSelectionText run;
  bool per_step = false;
  size_t limit = 0;
  double kernel_wait_us = 30;
  int64_t kernel_wait_ns = -1;  // finer spelling; -1: from kernel_wait_us
  std::string launch_scope = "hta";
  double runtime_cutoff_us = 50;
  double launch_delay_cutoff_us = 100;
  report::GpuLoadOptions load;
  bool leaf = false;
  double max_distance_ms = 0;
  FormatOptions format;
};

Result<int> run_gpu(const GpuFlags& f) {
  SPROF_TRY(report::GpuInput input, report::load_gpu_input(f.path.where, f.load));
  for (const std::string& warning : input.trace.warnings) spdlog::warn("{}", warning);
  SPROF_TRY(query::RunSelection run, query::parse_run_selection(f.run));
  SPROF_TRY(report::GpuSelection selection, report::select_gpu_work(input, f.device, run, f.path.text));
  render::GpuViewOptions options;
  options.view = f.view;
  options.per_step = f.per_step;
  options.limit = f.limit;
  options.kernel_wait_ns = f.kernel_wait_ns >= 0 ? f.kernel_wait_ns : int64_t(std::llround(f.kernel_wait_us * 1000.0));
  options.launch.hta_scope = f.launch_scope == "hta";
  options.launch.runtime_cutoff_ns = int64_t(std::llround(f.runtime_cutoff_us * 1000.0));
  options.launch.launch_delay_cutoff_ns = int64_t(std::llround(f.launch_delay_cutoff_us * 1000.0));
  options.call_sites.leaf = f.leaf;
  options.call_sites.max_distance_ns = int64_t(f.max_distance_ms * 1e6);
  SPROF_TRY(render::GpuTable table, render::gpu_view_table(input, selection, options, f.path.text));
  print_answer(f.format, "gpu",
               {[&](Json& doc) { render::add_gpu_view_json(input, f.path.text, f.view, std::move(table), doc); },
                [&] { return render::gpu_view_csv(table); },
                [&] {
                  return render::gpu_view_text(input, f.view, std::move(table), global_options().color_enabled,
                                               terminal_width());
                }});
  return 0;
}

}  // namespace

void add_gpu(CLI::App& app, CommandList& commands) {
  auto f = std::make_shared<GpuFlags>();
  CLI::App* sub = app.add_subcommand("gpu", "GPU summaries of a profile or a kineto (torch.profiler) trace: "
                                            "kernels, memcpy, api, idle, breakdown, launch, overlap, callsites");
  add_profile_argument(sub, "path", f->path, "Profile directory, or a Chrome trace (.json, .json.gz)")->required();
  sub->add_option("view", f->view, "kernels | memcpy | api | idle | breakdown | launch | overlap | callsites")
      ->required()
      ->check(CLI::IsMember(render::kGpuViews));
  sub->add_option("--device", f->device, "Only this device (the process's CUDA ordinal)")->check(CLI::NonNegativeNumber);
  add_run_selection_options(sub, f->run, "GPU work");
  sub->add_flag("--per-step", f->per_step, "breakdown: one row per device and step");
  auto* wait_us = sub->add_option("--kernel-wait-us", f->kernel_wait_us,
                                  "idle: gaps shorter than this are kernel wait (default 30: HTA's consecutive_kernel_delay "
                                  "as its code applies it)")
                      ->check(CLI::NonNegativeNumber);
  sub->add_option("--kernel-wait-ns", f->kernel_wait_ns, "idle: the same threshold in ns")
      ->check(CLI::NonNegativeNumber)
      ->excludes(wait_us);
  sub->add_option("--launch-scope", f->launch_scope,
                  "launch: hta (default: work launched by cudaLaunchKernel[ExC], cudaMemcpyAsync, cudaMemsetAsync) | "
                  "all (every op whose launch call is in the trace)")
      ->check(CLI::IsMember({"hta", "all"}));
  sub->add_option("--runtime-cutoff-us", f->runtime_cutoff_us, "launch: launch calls longer than this are outliers (default 50, HTA's)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--launch-delay-cutoff-us", f->launch_delay_cutoff_us,
                  "launch: delays longer than this are outliers (default 100, HTA's)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--drop-last-step", f->load.drop_last_step,
                "HTA's default: leave out the last step and work launched in it or without a launch call");
  sub->add_flag("--round-us", f->load.round_us, "HTA's rounding of ns timestamps: starts up, ends down to whole us");
  sub->add_flag("--leaf", f->leaf, "callsites: the innermost Python frame, even in library code (default: the user's innermost frame)");
  sub->add_option("--max-distance-ms", f->max_distance_ms,
                  "callsites: farthest a sample may be from the launch (default: the samples around it)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--limit", f->limit, "At most this many rows (launch: outliers per device; default 10)");
  add_format_options(sub, f->format);
  commands.push_back({sub, [f]() -> Result<int> { return run_gpu(*f); }});
}

}  // namespace sprof::cli
