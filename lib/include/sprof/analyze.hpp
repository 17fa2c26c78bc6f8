#pragma once
// `sprof analyze DIR`: one page about a training job, from whatever the profile directory holds:
// sprof's manifest and raw samples, system metrics, the framework timeline (Step:ModeKeys.* events,
// read the way the rules read them, so smdebug's own directories work too) and the rule findings.
// Every section says why it is empty when its inputs are missing.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sprof/iterations.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/result.hpp"
#include "sprof/rules.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::report {

struct AnalyzeOptions {
  rules::RulesOptions rules;   // --param overrides (StepOutlier_stddev also sets the outlier threshold here)
  size_t top_functions = 10;   // overall
  size_t phase_functions = 3;  // per job phase
  size_t slowest_steps = 3;
  size_t step_functions = 5;   // per slow step
  TimeView time_view;          // which samples the functions of the run, phases and steps read
  size_t gpu_kernels = 5;      // top kernels in the GPU section
  size_t gpu_call_sites = 5;   // top call sites in the GPU section

  // No function, phase, slowest-step or GPU tables: the figures a reader of steps, rules and
  // system metrics needs (diff, export -f tables), for less work.
  static AnalyzeOptions figures_only() {
    AnalyzeOptions o;
    o.top_functions = o.phase_functions = o.slowest_steps = o.gpu_kernels = o.gpu_call_sites = 0;
    return o;
  }
};

struct JobProcess {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string python_version;
  std::vector<std::string> cmdline;
  uint64_t samples = 0;
  std::string error;
  // "main" (the command, or the process given to --pid), "DataLoader worker" (it ran
  // torch.utils.data's _worker_loop), "worker" (a child running its parent's command: a
  // multiprocessing pool's), or "child" (another program it started).
  std::string role;
};

// A machine of the job and the processes recorded on it. smdebug names a process's node
// "<pid or rank>-<host>" and a machine's system metrics "algo-<n>" (the only names its reader
// takes), so one machine shows as several node ids; views show machines.
struct JobMachine {
  std::string host;
  std::vector<std::string> processes;  // their node ids, sorted
  std::string system_node;             // the node id of its system metrics ("algo-1"); "" without
};

struct JobSummary {
  bool has_manifest = false;          // sprof.json present (a sprof profile)
  std::vector<std::string> command;   // launch: the command line; attach: the process's
  std::string state;                  // "complete", "recording" (cut short), "running" (attach, detached)
  std::string mode;                   // "launch" | "attach" (sprof profiles)
  int64_t target_pid = 0;             // attach: the process given to --pid
  std::optional<int> exit_status;
  int64_t start_us = 0;               // epoch µs; manifest, else the earliest metric/event
  int64_t end_us = 0;
  std::vector<std::string> python_versions;  // distinct, sorted
  std::vector<JobProcess> processes;
  std::vector<std::string> nodes;     // system and framework node ids
  std::vector<JobMachine> machines;   // the same, by machine
  // A job of several nodes (nodes/<host>/, each with its sprof.json, no sprof.json of its own):
  // how many node profiles, and the processes their manifests list.
  size_t node_profiles = 0;
  size_t node_processes = 0;
  double duration_s() const { return static_cast<double>(end_us - start_us) / 1e6; }
};

// initialization: job start -> first step start; training_loop: first step start -> last step end;
// finalization: last step end -> job end.
struct JobPhase {
  std::string name;
  int64_t start_us = 0;
  int64_t end_us = 0;
  double share = 0;  // of the job's duration
  std::vector<FunctionTime> top;  // from the samples taken in the phase
  double seconds() const { return static_cast<double>(end_us - start_us) / 1e6; }
};

struct StepRecord {
  std::string node;
  std::string mode;  // "TRAIN", "EVAL", "PREDICT", "GLOBAL" (the part after Step:ModeKeys.)
  std::string step;  // step_num as written
  int64_t pid = 0;   // OS pid of the process that ran it
  int64_t start_us = 0;
  int64_t end_us = 0;
  bool outlier = false;
  std::vector<FunctionTime> top;  // slowest steps only: that process's samples in the step, in the page's view
  double sampled_s = 0;           // their summed weight
  std::optional<double> wait_s;   // the input wait before the step (sprof/iterations.hpp), when measured
  double dataloader_s = 0;        // of it, inside DataLoader fetches
  double seconds() const { return static_cast<double>(end_us - start_us) / 1e6; }
  std::optional<int64_t> number() const;  // `step` as an integer, when it is one
};

// StepOutlier's definition: a step is an outlier when its duration > mean + stddev·std (population)
// of its (node, mode) series. The rule itself only counts once a series has more than 100 steps.
struct StepModeStats {
  std::string node;
  std::string mode;
  size_t count = 0;
  double mean = 0, p50 = 0, p95 = 0, max = 0, min = 0;  // seconds; numpy's linear percentiles
  double outlier_threshold = 0;
  std::vector<std::string> outlier_steps;
};

struct SystemUsageRow {
  std::string node;     // as on disk ("algo-1")
  std::string machine;  // the host it stands for (JobMachine::host)
  std::string metric;  // "CPUUtilization (mean of 16 cores)", "MemoryUsedPercent", "process tree RSS", ...
  std::string unit;    // "%", "% of one core", "B", "B/s", "1/s", ""
  size_t ticks = 0;
  double mean = 0, p50 = 0, p95 = 0, max = 0, min = 0;
};

struct SystemCoverage {
  std::string node;
  std::string machine;
  double first_s = 0;  // epoch seconds of the first and last tick
  double last_s = 0;
  size_t ticks = 0;
  double interval_s = 0;  // median spacing of ticks
};

// The GPU work libsprof_cupti.so recorded (gpu/<pid>.gpu), as `sprof gpu` views it.
struct GpuDeviceUsage {
  int32_t device = 0;
  std::string name;       // "" when the trace did not say
  double span_s = 0;      // first op start .. last op end
  double compute_share = 0;      // of the span: a computation kernel running
  double non_compute_share = 0;  // only copies, memsets or communication kernels running
  double idle_share = 0;         // nothing running
};
struct GpuKernelRow {
  std::string name;
  int64_t instances = 0;
  double total_s = 0;
  double avg_us = 0;
  double share = 0;  // of all kernel time
};
struct GpuCallSiteRow {
  std::string site;  // "file:line function", or why the work could not be attributed
  bool attributed = true;
  double gpu_s = 0;
  double share = 0;  // of all GPU work
  int64_t kernels = 0;
  std::string top_kernel;
};
struct GpuSummary {
  bool present = false;  // the profile holds GPU activity
  std::string note;      // why not, when not
  int64_t kernels = 0;
  int64_t copies = 0;    // memcpy and memset
  double kernel_s = 0;
  double copy_s = 0;
  std::vector<GpuDeviceUsage> devices;
  std::vector<GpuKernelRow> top_kernels;
  std::vector<GpuCallSiteRow> call_sites;
  std::string call_sites_note;  // why there are none
};

struct AnalyzeReport {
  std::filesystem::path dir;
  JobSummary job;

  std::vector<JobPhase> phases;  // empty without steps
  std::string phases_note;

  double outlier_stddev = 3;
  std::vector<StepModeStats> step_stats;
  std::vector<StepRecord> slowest_steps;
  std::vector<StepRecord> steps;  // every step, in the order found (no functions); not in the text or JSON page
  // attach: steps cut by the recording window (under way at the attach or at the detach), left
  // out of every step figure.
  std::vector<StepRecord> partial_steps;
  std::string steps_note;

  // Training-loop iterations per mode (input wait + step), the training loop's first; the headline
  // says how much of the loop waited for input. Empty without a measured wait.
  std::vector<rules::IterationStats> iterations;
  std::string loop_headline;
  std::vector<FunctionTime> wait_top;  // the step threads' samples while the loop waited, idle included
  double wait_sampled_s = 0;           // their summed weight

  bool has_samples = false;
  TimeView time_view;         // AnalyzeOptions::time_view: what the function tables show
  ThreadsByPid step_threads;  // the threads that run steps (step_threads_of), read once
  SampleSummary samples;  // overall, top functions by self time
  std::string samples_note;

  std::vector<SystemCoverage> system_coverage;
  std::vector<SystemUsageRow> system;
  std::optional<int> system_interval_ms;  // from the manifest, when sprof recorded them
  std::optional<double> sysmon_cpu_share; // the system monitor thread's CPU time / its wall time

  // sprof's own costs as record measured them, each under its own name: "sampler", "system
  // monitor", "markers" (draining and persisting the bootstrap's markers), "stats directories"
  // (writing them after the target ended), or for a profile recorded before they were told apart,
  // "sprof process" (all of sprof's threads). Parts under 1 ms of CPU are left out (sprof.json's
  // own_costs section has every measured figure).
  struct OwnCost {
    std::string name;
    double cpu_s = 0;
    double wall_s = 0;             // the time it was spent over
    bool after_sampling = false;   // spent after the target ended, before record exited
    double core_share() const { return wall_s > 0 ? cpu_s / wall_s : 0; }
  };
  std::vector<OwnCost> own_costs;
  std::string system_note;

  GpuSummary gpu;

  std::vector<rules::RuleResult> rules;
  std::vector<std::string> warnings;  // files skipped while reading (each already logged once)

  // Step times per rank and per node when more than one process ran steps of a mode (several
  // ranks, or a job's several nodes): who is slow, and by how much.
  struct RankStepTimes {
    std::string node_id;  // "<pid>-<host>", the steps' node in framework/pevents
    std::string host;
    std::string rank;     // $RANK of the process, from its node's sprof.json; "" when unknown
    size_t steps = 0;
    double mean_s = 0;
    double median_s = 0;
    double p95_s = 0;
    double vs_fastest = 0;  // median / the fastest rank's median - 1
  };
  struct NodeStepTimes {
    std::string host;
    size_t ranks = 0;
    size_t steps = 0;
    double median_s = 0;    // over all its ranks' steps
    double vs_fastest = 0;
  };
  struct StepSkew {
    std::string mode;  // "TRAIN" when there are training steps
    std::vector<RankStepTimes> ranks;  // by rank, then node id
    std::vector<NodeStepTimes> nodes;
    std::string straggler;       // the slowest rank's node id
    std::string straggler_node;  // the slowest node's host (with several nodes)
    double skew = 0;             // the slowest rank's median / the fastest's - 1
  };
  std::optional<StepSkew> step_skew;
};

// Step-time skew of the steps of the mode with training steps (else the most common one) when
// more than one process ran them; `ranks` by node id (store::process_ranks).
std::optional<AnalyzeReport::StepSkew> step_skew(const std::vector<StepRecord>& steps,
                                                 const std::map<std::string, std::string>& ranks);

// Analyses the profile. None of sprof.json, samples/, system/ and framework/: bad_input. Unknown
// rule parameters: usage errors, as in `sprof rules`. What it reads stays in `profile` for the
// caller's own use.
Result<AnalyzeReport> analyze(const query::Profile& profile, const AnalyzeOptions& options);

}  // namespace sprof::report
