#pragma once
// `sprof gpu VIEW`: summaries of GPU activity in the columns nsys's stats reports and HTA's
// analyses use, computed from a store::GpuTrace (a profile's own files or a kineto trace).
// All times are ns on the trace's clock.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/gpu_trace.hpp"
#include "sprof/modes.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"
#include "sprof/run_selection.hpp"

namespace sprof::report {

// A step the selection can name: from the profile's step timeline, or a trace's ProfilerStep#N.
struct GpuStepWindow {
  int64_t step = 0;
  Mode mode = Mode::global;  // global for a trace's ProfilerStep#N
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // The loop's iteration that ends with the step (sprof/iterations.hpp): from the end of the
  // process's previous step, so that GPU work launched between steps (input copies, work after
  // optimizer.step()) belongs to one. start_ns for a process's first step and for ProfilerStep#N,
  // which already spans its iteration.
  int64_t iteration_start_ns = 0;
  int32_t pid = 0;  // the process that ran the step; 0 for a trace's (any process)
};

// What a GPU view reads: the trace and the steps that cut it.
struct GpuInput {
  store::GpuTrace trace;
  std::vector<GpuStepWindow> steps;  // by start
  std::optional<query::Profile> profile;  // the profile directory it came from; none for a trace file
  int64_t epoch_offset_ns = 0;       // epoch ns = trace ns + this (profiles: from sprof.json's clock pair)
};

// HTA's lossy reading choices, off by default (sprof keeps every event and exact ns).
struct GpuLoadOptions {
  // HTA's default (include_last_profiler_step=False): keep only work launched by a call that
  // began before the last step began, and drop work without a launch call; the last step goes.
  bool drop_last_step = false;
  // HTA's rounding of ns-resolution traces (round_down_time_stamps): starts up, ends down to a
  // whole µs.
  bool round_us = false;
};

// A profile directory (its gpu/<pid>.gpu files and step timeline) or a Chrome trace file
// (.json or .json.gz). A profile without GPU files is bad_input naming what `record` saw
// (the gpu section of sprof.json) so that the user learns why.
Result<GpuInput> load_gpu_input(const store::ProfilePath& path, const GpuLoadOptions& options = {});
// The same for a profile already open.
Result<GpuInput> load_gpu_input(const query::Profile& profile, const GpuLoadOptions& options = {});

// Which work a view counts: ops (and calls) that start inside one of `windows` (all when empty),
// on `device` when given.
struct GpuSelection {
  std::optional<int32_t> device;
  std::vector<std::pair<int64_t, int64_t>> windows;  // [start, end) ns
  bool contains(int64_t t_ns) const;
};

// The GPU work of `device` (-1: every device) in the steps or times `selection` names; `path` names
// the input in errors (usage errors: an unknown device, no steps known, no step matched).
Result<GpuSelection> select_gpu_work(const GpuInput& input, int device, const query::RunSelection& selection,
                                     const std::string& path);

// Steps first..last (inclusive) of `mode` (global: any), as windows; none when no step matches.
std::vector<std::pair<int64_t, int64_t>> step_windows(const std::vector<GpuStepWindow>& steps, std::optional<Mode> mode,
                                                      std::optional<int64_t> first, std::optional<int64_t> last);

struct DurationStats {
  int64_t count = 0;
  int64_t total_ns = 0;
  double avg_ns = 0;
  double median_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double stddev_ns = 0;  // sample standard deviation (n - 1), 0 for one instance, as nsys
};
DurationStats duration_stats(std::vector<int64_t> durations);

// nsys cuda_gpu_kern_sum: per kernel name, by total time.
struct KernelSummary {
  std::string name;
  DurationStats time;
  double share = 0;  // of all selected kernel time
};
std::vector<KernelSummary> kernel_summary(const GpuInput& input, const GpuSelection& selection);

// nsys cuda_gpu_mem_time_sum / _size_sum: per copy kind (and memsets), with throughput.
struct MemorySummary {
  std::string operation;  // "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"
  DurationStats time;
  int64_t bytes = 0;
  double throughput_gb_s = 0;  // bytes / total time
  double share = 0;            // of all selected copy and memset time
};
std::vector<MemorySummary> memory_summary(const GpuInput& input, const GpuSelection& selection);

// nsys cuda_api_sum: per CUDA API name.
struct ApiSummary {
  std::string name;
  bool driver = false;
  DurationStats time;
  double share = 0;
};
std::vector<ApiSummary> api_summary(const GpuInput& input, const GpuSelection& selection);

// HTA's idle time breakdown (get_idle_time_breakdown) per device and stream: gaps between
// consecutive kernels, copies and memsets on the stream (by start), host wait when the op's launch
// call began after the previous op ended, kernel wait when the gap is under `kernel_wait_ns`, other
// otherwise. HTA's consecutive_kernel_delay defaults to 30 and its docs say ns, but its code
// compares it with gaps in µs: 30 µs is what HTA applies, and sprof's default.
constexpr int64_t kHtaKernelWaitNs = 30'000;
struct IdleRow {
  int32_t device = 0;
  int64_t stream = 0;
  int64_t ops = 0;
  int64_t span_ns = 0;  // first op start .. last op end
  int64_t busy_ns = 0;
  int64_t idle_ns = 0;
  int64_t host_wait_ns = 0;
  int64_t kernel_wait_ns = 0;
  int64_t other_ns = 0;
  double idle_share = 0;  // idle / span
};
std::vector<IdleRow> idle_breakdown(const GpuInput& input, const GpuSelection& selection,
                                    int64_t kernel_wait_ns = kHtaKernelWaitNs);

// HTA's temporal breakdown (get_temporal_breakdown) per device (and per step): from the first
// op's start to the last op's end, idle (nothing on the device), compute (a computation kernel
// running), non-compute (the rest of the busy time: communication kernels, copies, memsets, and
// the cuda_sync events kineto places on a stream, which HTA counts as busy).
struct BreakdownRow {
  int32_t device = 0;
  std::optional<GpuStepWindow> step;
  int64_t span_ns = 0;
  int64_t compute_ns = 0;
  int64_t non_compute_ns = 0;
  int64_t idle_ns = 0;
};
std::vector<BreakdownRow> temporal_breakdown(const GpuInput& input, const GpuSelection& selection, bool per_step);

// HTA's kernel launch statistics (get_cuda_kernel_launch_stats) per device: each op tied to its
// launch call (same process and correlation id), launch delay = op start - call end, clamped at 0
// (CUPTI's clocks may invert them slightly).
struct LaunchOptions {
  // HTA's scope: ops launched by cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync or
  // cudaMemsetAsync (its include_memory_events). false: every op whose launch call is in the
  // trace (cuLaunchKernel of Triton kernels, cudaGraphLaunch, synchronous copies).
  bool hta_scope = true;
  int64_t runtime_cutoff_ns = 50'000;       // HTA's runtime_cutoff (50 µs)
  int64_t launch_delay_cutoff_ns = 100'000;  // HTA's launch_delay_cutoff (100 µs)
  size_t outliers = 10;
};
struct LaunchOutlier {
  std::string kernel;
  std::string api;
  int64_t correlation = 0;
  int32_t tid = 0;
  int64_t launch_start_ns = 0;
  int64_t launch_ns = 0;  // the call's duration
  int64_t delay_ns = 0;
  int64_t kernel_ns = 0;
};
struct LaunchSummary {
  int32_t device = 0;
  int64_t kernels = 0;            // all selected kernels
  int64_t unmatched_kernels = 0;  // kernels whose launch call is not in the trace
  int64_t launches = 0;           // ops in scope with their launch call: HTA's rows
  DurationStats delay;            // over the launches
  double p95_delay_ns = 0;
  double p99_delay_ns = 0;
  int64_t short_kernels = 0;         // kernels shorter than 10 µs: launch-bound (CUDA graphs, torch.compile)
  int64_t long_launches = 0;         // HTA's runtime outliers: call longer than the runtime cutoff
  int64_t long_delays = 0;           // HTA's launch delay outliers: delay over the delay cutoff
  int64_t gpu_shorter_than_cpu = 0;  // HTA's short GPU kernels: op shorter than its call, call within the runtime cutoff
  std::vector<LaunchOutlier> outliers;  // longest delays first
};
std::vector<LaunchSummary> launch_summary(const GpuInput& input, const GpuSelection& selection, const LaunchOptions& options);

// Launch calls whose (process, correlation id) another call repeats: CUPTI never does within a
// process, but merged or edited traces may. Views then tie an op to the latest such call that
// began before it; sprof gpu warns when this is not 0.
int64_t duplicated_correlations(const store::GpuTrace& trace);

// HTA's communication/computation overlap (get_comm_comp_overlap) per device: how much of the
// communication kernels' time had a computation kernel running beside it.
struct OverlapRow {
  int32_t device = 0;
  int64_t communication_ns = 0;  // union of communication kernel intervals
  int64_t computation_ns = 0;    // union of computation kernel intervals
  int64_t overlapped_ns = 0;     // their intersection
  double overlap_share = 0;      // overlapped / communication
};
std::vector<OverlapRow> overlap_summary(const GpuInput& input, const GpuSelection& selection);

// GPU time by the Python line that launched it: each op's launch call (correlation id) gives the
// OS thread and moment of the launch; the sample of that thread nearest that moment gives the
// Python stack: one of the two samples around the launch, or, outside the sampled span, one within
// twice its sampling interval (`max_distance_ns` instead bounds the distance always). The call
// site is the innermost frame of the user's code (not the standard library's, site-packages' or
// dist-packages'), or the innermost frame when `leaf` or when no frame is the user's.
struct CallSiteKernel {
  std::string name;
  int64_t total_ns = 0;
  int64_t count = 0;
};
struct CallSite {
  std::string file;     // "" for work not tied to a sample
  int32_t line = 0;
  std::string function;
  std::string why_unattributed;  // for the rows without a file: what was missing
  int64_t gpu_ns = 0;
  double share = 0;     // of all selected GPU work
  int64_t kernels = 0;
  int64_t copies = 0;   // memcpy and memset
  int64_t launches = 0; // distinct launch calls
  std::vector<CallSiteKernel> top_kernels;  // by time, at most 3
};
struct CallSiteOptions {
  bool leaf = false;
  int64_t max_distance_ns = 0;  // 0: twice the sample's own interval
};
// Needs the samples of the profile `input` came from; a trace file is a usage error.
Result<std::vector<CallSite>> call_sites(const GpuInput& input, const GpuSelection& selection,
                                         const CallSiteOptions& options);

// HTA's kernel types, by name (get_kernel_type): communication (nccl..., hip..., hccl...,
// ...ncclKernel...), memory (Memcpy..., Memset..., dma...), computation (anything its inverse
// pattern leaves: no Memcpy, Memset, dma or Sync in the name, ...), other ("Stream Sync", ...).
enum class KernelType { computation, communication, memory, other };
KernelType kernel_type(std::string_view name);
KernelType kernel_type(const store::GpuOp& op);

}  // namespace sprof::report
