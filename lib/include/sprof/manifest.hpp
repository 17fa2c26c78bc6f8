#pragma once
// <out>/sprof.json: what was recorded, how, and how well (man/sprof.1, PROFILE DIRECTORY).
// record writes it when it starts (state "recording") and rewrites it atomically at the end
// (state "complete"); a profile whose manifest still says "recording" was cut short, and its
// sample logs hold everything up to their last complete chunk.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/layout.hpp"
#include "sprof/result.hpp"

namespace sprof::store {

inline constexpr int kManifestSchemaVersion = 1;

struct ManifestProcess {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string node_id;         // "<pid>-<host>", smdebug's spelling
  std::string python_version;  // empty when it never became a Python sprof could read
  std::string executable;
  std::vector<std::string> cmdline;
  std::string rank;            // $RANK of the process (torchrun), if set
  std::string local_rank;      // $LOCAL_RANK, $WORLD_SIZE, $GROUP_RANK likewise
  std::string world_size;
  std::string group_rank;
  std::string sample_log;      // relative to the profile directory; empty when nothing was sampled
  int64_t attach_ns = 0;       // CLOCK_MONOTONIC; 0 if never attached
  int64_t detach_ns = 0;
  uint64_t samples = 0;        // thread samples logged
  uint64_t invalid = 0;        // thread samples dropped as torn
  uint32_t threads = 0;
  std::string error;           // why it could not be sampled, when it could not
};

struct SamplingHealth {
  uint64_t ticks = 0;           // sampling instants
  uint64_t thread_samples = 0;  // valid thread samples logged
  uint64_t invalid = 0;         // thread samples dropped as torn or inconsistent
  uint64_t late_ticks = 0;      // ticks taken more than one mean interval late
  double max_lag_ms = 0;        // worst lateness of a tick
  uint64_t behind_warnings = 0; // "behind in sampling" warnings given
  double achieved_rate_hz = 0;  // ticks / sampled seconds
  double sampler_cpu_s = 0;     // the sampling thread's CPU time (user + system), without the hooks' share
  double process_cpu_s = 0;     // all of sprof's CPU time until sampling ended (every thread, setup too)
  double mean_tick_us = 0;      // mean wall time to take one tick (all processes)
  double max_tick_ms = 0;       // slowest tick
  // What the ticks read, per tick on average (all processes): process_vm_readv calls, remote
  // regions and bytes they copied, /proc files read for run states.
  double remote_reads_per_tick = 0;
  double regions_per_tick = 0;
  double bytes_per_tick = 0;
  double proc_reads_per_tick = 0;
  double invalid_share() const {
    uint64_t total = thread_samples + invalid;
    return total == 0 ? 0.0 : double(invalid) / double(total);
  }
};

struct Manifest {
  int schema_version = kManifestSchemaVersion;
  std::string sprof_version;
  std::string state = "recording";  // "recording" until record finishes, then "complete"
  std::string mode;                 // "launch" or "attach"
  std::vector<std::string> command; // launch: the command line
  int32_t target_pid = 0;           // launched or attached process
  std::string host;

  // One (monotonic, realtime) pair read back to back at start; convert sample times with
  // epoch_ns = t - clock_monotonic_ns + clock_realtime_ns.
  int64_t clock_monotonic_ns = 0;
  int64_t clock_realtime_ns = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC
  int64_t end_ns = 0;

  double rate_hz = 0;
  bool blocking = false;
  bool subprocesses = false;
  std::string jitter = "exponential";

  std::vector<ManifestProcess> processes;
  SamplingHealth health;
  std::optional<int> exit_status;  // the launched command's exit status (128+N for signal N)
  std::optional<int> exit_signal;
  // attach: whether the process still ran when sampling stopped (sprof detached from it).
  std::optional<bool> running_at_end;
  std::vector<std::string> errors;

  // Sections other stages add (bootstrap, sysmon, ...): top-level key -> JSON text.
  std::vector<std::pair<std::string, std::string>> extra;

  // Epoch ns = CLOCK_MONOTONIC ns + this: the recording's one clock pair, read back to back.
  int64_t epoch_offset_ns() const { return clock_realtime_ns - clock_monotonic_ns; }
  int64_t to_epoch_us(int64_t monotonic_ns) const { return (monotonic_ns + epoch_offset_ns()) / 1000; }
  int64_t to_monotonic_ns(int64_t epoch_us) const { return epoch_us * 1000 - epoch_offset_ns(); }
  std::vector<std::string> node_ids() const;
};

// Calls fn with a profile's sprof.json and, in a job's prefix (the S3 job layout,
// nodes/<host>/sprof.json), with every node's. Unreadable manifests are passed over.
void for_each_manifest(const std::filesystem::path& dir, const std::function<void(const Manifest&)>& fn, const ProfileFiles& files = local_files());

// The ranks ($RANK) of a profile's processes by node id ("<pid>-<host>"), from for_each_manifest.
std::map<std::string, std::string> process_ranks(const std::filesystem::path& dir, const ProfileFiles& files = local_files());

// Writes <dir>/sprof.json atomically (temporary file + rename).
Status write_manifest(const std::filesystem::path& dir, const Manifest& manifest);
Result<Manifest> read_manifest(const std::filesystem::path& dir, const ProfileFiles& files = local_files());
// The manifest in `text`; `path` names it in errors.
Result<Manifest> parse_manifest(std::string_view text, const std::filesystem::path& path);

}  // namespace sprof::store
