#pragma once
// One profile directory, opened once: what every analysis reads (the manifest, the clock offset,
// the raw samples, the step timeline, smdebug's system metrics and framework timeline, the GPU
// activity), each loaded on first use and then kept, so that a command that runs several
// analyses (analyze runs the rules; diff and tables run analyze) reads each file once.
//
// A Profile is a handle: copies share what was loaded. Not for concurrent use from several
// threads. The directory may be local or an S3 prefix (store::ProfilePath's source).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sprof/gpu_trace.hpp"
#include "sprof/layout.hpp"
#include "sprof/manifest.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/result.hpp"
#include "sprof/step_timeline.hpp"
#include "sprof/system_metrics.hpp"
#include "sprof/trace_events.hpp"

namespace sprof::query {

class Profile {
 public:
  // Errors (bad_input, one wording for every command): `dir` missing or not a directory.
  // What the directory holds is not checked here: each analysis says what it lacks.
  static Result<Profile> open(const store::ProfilePath& where);
  static Result<Profile> open(const std::filesystem::path& dir) { return open(store::ProfilePath(dir)); }

  const std::filesystem::path& dir() const;
  // The directory with its files' source, for readers of what Profile does not load itself.
  const store::ProfilePath& where() const;
  const store::ProfileFiles& files() const { return where().files(); }
  // Which parts of the layout are present (sprof.json, samples/, framework/, system/, markers).
  const store::ProfileContents& contents() const;
  // The one wording of a directory that holds no profile (store::not_a_profile_error).
  Error not_a_profile() const;

  // sprof.json; an error when it is absent or cannot be parsed.
  Result<const store::Manifest*> manifest() const;
  // Epoch ns = monotonic ns + this: the recording's clock pair, 0 without a readable manifest
  // (smdebug's profiles carry epoch times already).
  int64_t epoch_offset_ns() const;
  // Every process's sample log with the manifest (store::load_profile_samples); bad_input when
  // the directory is not sprof's.
  Result<const store::ProfileSamples*> samples() const;
  // Steps from markers/ (timeline::read_step_timeline, each process ended at its detach time);
  // empty when the profile has no markers.
  Result<const timeline::StepTimeline*> step_timeline() const;
  // system/incremental, smdebug's order; empty when there is none.
  Result<const std::vector<store::SystemMetric>*> system_metrics() const;
  // framework/pevents (with the files skipped while reading); empty when there is none.
  Result<const store::TraceReadResult*> trace_events() const;
  // The same events, kept alive by the pointer as long as its holder needs them (even past this
  // Profile): a long job has millions, so the rules borrow them rather than copy.
  Result<std::shared_ptr<const std::vector<store::TraceEvent>>> shared_trace_events() const;
  // gpu/<pid>.gpu, as libsprof_cupti.so wrote it.
  Result<const store::GpuTrace*> gpu_activity() const;
  // The machine each system-metrics node id stands for (store::system_node_hosts).
  const std::map<std::string, std::string>& system_hosts() const;
  // Each process's rank ($RANK) by node id, from the profile's sprof.json and its nodes'
  // (store::process_ranks).
  const std::map<std::string, std::string>& process_ranks() const;
  // A job of several nodes (no sprof.json of its own): each node's profile under nodes/ that has
  // one, by name. Empty for one node's profile.
  std::vector<Profile> nodes() const;

 private:
  struct Loaded;
  explicit Profile(std::shared_ptr<Loaded> loaded);
  std::shared_ptr<Loaded> loaded_;
};

}  // namespace sprof::query
