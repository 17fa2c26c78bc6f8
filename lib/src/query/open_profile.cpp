// query::Profile: each part of a profile directory read on first use, kept with its error.

#include "sprof/open_profile.hpp"

#include <optional>

#include "sprof/manifest_sections.hpp"
#include "sprof/profile_files.hpp"

namespace sprof::query {
namespace fs = std::filesystem;

struct Profile::Loaded {
  store::ProfilePath where;
  store::ProfileContents contents;
  // Each part once: the value or the error it gave, so a second reader gets the same answer.
  std::optional<Result<store::Manifest>> manifest;
  std::optional<Result<store::ProfileSamples>> samples;
  std::optional<Result<timeline::StepTimeline>> step_timeline;
  std::optional<Result<std::vector<store::SystemMetric>>> system_metrics;
  std::optional<Result<store::TraceReadResult>> trace_events;
  std::optional<Result<store::GpuTrace>> gpu_activity;
  std::optional<std::map<std::string, std::string>> system_hosts;
  std::optional<std::map<std::string, std::string>> process_ranks;
};

namespace {

// The cached part as a pointer, or its error.
template <class T, class Load>
Result<const T*> once(std::optional<Result<T>>& slot, Load&& load) {
  if (!slot) slot.emplace(load());
  if (!slot->ok()) return slot->error();
  return &slot->value();
}

}  // namespace

Profile::Profile(std::shared_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}

Result<Profile> Profile::open(const store::ProfilePath& where) {
  SPROF_TRY_STATUS(store::check_directory(where.path, where.files()));
  auto loaded = std::make_shared<Loaded>();
  loaded->where = where;
  loaded->contents = store::detect(where.path, where.files());
  return Profile(std::move(loaded));
}

const fs::path& Profile::dir() const { return loaded_->where.path; }

const store::ProfilePath& Profile::where() const { return loaded_->where; }

const store::ProfileContents& Profile::contents() const { return loaded_->contents; }

Error Profile::not_a_profile() const { return store::not_a_profile_error(dir(), files()); }

Result<const store::Manifest*> Profile::manifest() const {
  return once(loaded_->manifest, [&] { return store::read_manifest(dir(), files()); });
}

int64_t Profile::epoch_offset_ns() const {
  auto m = manifest();
  return m.ok() ? (*m)->epoch_offset_ns() : 0;
}

Result<const store::ProfileSamples*> Profile::samples() const {
  return once(loaded_->samples, [&] { return store::load_profile_samples(dir(), std::nullopt, files()); });
}

Result<const timeline::StepTimeline*> Profile::step_timeline() const {
  return once(loaded_->step_timeline, [&]() -> Result<timeline::StepTimeline> {
    // Processes end at their detach time from sprof.json; a corrupt one is an error, not ignored.
    if (!loaded_->contents.manifest) return timeline::build_profile_timeline(dir(), nullptr, nullptr, files());
    SPROF_TRY(const store::Manifest* m, manifest());
    return timeline::build_profile_timeline(dir(), m, nullptr, files());
  });
}

Result<const std::vector<store::SystemMetric>*> Profile::system_metrics() const {
  return once(loaded_->system_metrics, [&] { return store::read_system_metrics(dir(), files()); });
}

Result<const store::TraceReadResult*> Profile::trace_events() const {
  return once(loaded_->trace_events, [&] { return store::read_trace_events(dir(), files()); });
}

Result<std::shared_ptr<const std::vector<store::TraceEvent>>> Profile::shared_trace_events() const {
  SPROF_TRY(const store::TraceReadResult* read, trace_events());
  return std::shared_ptr<const std::vector<store::TraceEvent>>(loaded_, &read->events);
}

Result<const store::GpuTrace*> Profile::gpu_activity() const {
  return once(loaded_->gpu_activity, [&] { return store::read_gpu_activity(dir(), files()); });
}

const std::map<std::string, std::string>& Profile::system_hosts() const {
  if (!loaded_->system_hosts) loaded_->system_hosts = store::system_node_hosts(dir(), files());
  return *loaded_->system_hosts;
}

const std::map<std::string, std::string>& Profile::process_ranks() const {
  if (!loaded_->process_ranks) loaded_->process_ranks = store::process_ranks(dir(), files());
  return *loaded_->process_ranks;
}

std::vector<Profile> Profile::nodes() const {
  std::vector<Profile> out;
  if (loaded_->contents.manifest) return out;  // one node's profile
  const store::ProfileFiles& files = this->files();
  auto entries = files.list(dir() / "nodes");
  if (!entries.ok()) return out;
  for (const store::FileEntry& e : *entries) {
    if (e.kind != store::FileKind::directory) continue;
    if (files.kind(e.path / store::kManifestFileName) != store::FileKind::file) continue;
    auto node = open(store::ProfilePath(e.path, loaded_->where.source));
    if (node.ok()) out.push_back(std::move(*node));
  }
  return out;
}

}  // namespace sprof::query
