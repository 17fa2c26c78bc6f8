#pragma once
// The pieces of `analyze` (sprof/analyze.hpp), one file each.

#include <vector>

#include "sprof/analyze.hpp"
#include "sprof/gpu_report.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/system_metrics.hpp"
#include "sprof/trace_events.hpp"

namespace sprof::report {

// Step:ModeKeys.* events (smdebug's step markers, as the rules select them), in start order.
std::vector<StepRecord> collect_steps(const std::vector<store::TraceEvent>& events);

// Per (node, mode) statistics; marks the outliers (duration > mean + stddev·std) in `steps`.
std::vector<StepModeStats> step_statistics(std::vector<StepRecord>& steps, double stddev);

// Each step's input wait, the iteration statistics per mode, the headline and, from the samples
// (when given), what the threads that run steps did while the training loop waited.
void summarize_iterations(std::vector<StepRecord>& steps, const std::vector<store::TraceEvent>& events,
                          const store::ProfileSamples* samples, size_t top_n, AnalyzeReport& report);

// Initialization, training loop and finalization of a job with steps, within [job_start, job_end].
std::vector<JobPhase> job_phases(const std::vector<StepRecord>& steps, int64_t job_start_us, int64_t job_end_us);

// Per node: tick coverage and one row per metric (device metrics averaged over the devices of a tick).
void summarize_system(const std::vector<store::SystemMetric>& metrics, std::vector<SystemCoverage>& coverage,
                      std::vector<SystemUsageRow>& rows);

// The GPU section from the profile's GPU activity (load_gpu_input): per-device busy and idle
// shares (HTA's temporal breakdown), top kernels, top call sites. Call sites that cannot be had
// become a note.
GpuSummary summarize_gpu(const GpuInput& input, const AnalyzeOptions& options);

// For a job of several nodes (query::Profile::nodes): the functions of every node's samples
// (report.samples), of each phase (report.phases' top) and of each step in `slowest` (from its own
// node's samples), reading one node at a time and letting it go before the next (`nodes` is taken
// by value for that). report.has_samples says whether any node had samples.
void summarize_job_nodes(std::vector<query::Profile> nodes, const AnalyzeOptions& options, AnalyzeReport& report,
                         std::vector<StepRecord>& slowest);

}  // namespace sprof::report
