// StepRecordHook: sprof's bootstrap in a launched command, its markers persisted to
// markers/markers.log, and the step timeline and framework trace built when sampling ends.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <system_error>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/gpu_trace.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/step_hook.hpp"
#include "sprof/step_inference.hpp"
#include "sprof/step_trace.hpp"

namespace sprof::bootstrap {
namespace fs = std::filesystem;

std::string StepSummary::text() const {
  std::string out;
  for (const char* mode : {"train", "eval", "predict", "global"}) {
    auto it = steps.find(mode);
    if (it == steps.end() || it->second == 0) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", it->second, mode);
  }
  if (out.empty()) return out;
  return fmt::format("steps: {} ({}, from {})", out, framework, source);
}

StepRecordHook::StepRecordHook(StepHookOptions options) : options_(std::move(options)) {}

StepRecordHook::~StepRecordHook() {
  if (log_fd_ >= 0) ::close(log_fd_);
}

Status StepRecordHook::prepare_child(const fs::path& output_dir, launch::ChildSetup& setup) {
  if (!options_.inject) return {};
  fs::path markers = output_dir / "markers";
  std::error_code ec;
  fs::create_directories(markers, ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", markers.string(), ec.message());
  log_path_ = (output_dir / store::kMarkersLog).string();
  log_fd_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND, 0644);
  if (log_fd_ < 0) return make_error(ErrorKind::io, "cannot create {}: {}", log_path_, std::strerror(errno));

  PrepareOptions prepare_options;
  prepare_options.torch = options_.torch;
  prepare_options.step_functions = options_.step_functions;
  prepare_options.step_fn_mode = options_.step_fn_mode;
  // The bootstrap's files go to a private temporary directory removed with the hook (after the
  // command has exited), not into the profile: users should not find sprof's sources there, and
  // its name is how readers recognise sprof's own frames (store::is_sprof_bootstrap_file).
  // $TMPDIR first; /tmp when that fails (PYTHONPATH cannot hold a path with ':').
  Result<BootstrapEnv> env = make_error(ErrorKind::io, "no temporary directory for the bootstrap");
  for (const fs::path& base : {TempDir::default_base(), fs::path("/tmp")}) {
    auto dir = TempDir::create(store::kBootstrapDirPrefix, base);
    if (!dir.ok()) {
      env = std::move(dir).error();
      continue;
    }
    env = prepare(dir->path(), prepare_options);
    if (env.ok()) {
      temp_dir_ = std::move(dir).value();
      break;
    }
  }
  if (!env.ok()) {
    spdlog::warn("no step markers: {}", env.error().message);
    ::close(log_fd_);
    log_fd_ = -1;
    fs::remove(log_path_, ec);
    return {};
  }
  env_.emplace(std::move(env).value());
  for (const auto& variable : env_->variables) setup.env.push_back(variable);
  // The child gets the write end under the same number (SPROF_MARKER_FD names it).
  setup.inherit_fds.push_back(env_->channel.write_fd());
  summary_.injected = true;
  return {};
}

void StepRecordHook::drain() {
  if (!env_) return;
  std::array<char, 65536> buffer;
  for (;;) {
    ssize_t n = ::read(env_->channel.read_fd(), buffer.data(), buffer.size());
    if (n > 0) {
      summary_.marker_lines += std::count(buffer.data(), buffer.data() + n, '\n');
      // Raw bytes: the log is the stream itself, so lines stay verbatim and in arrival order, and
      // the page cache has them at once (no user-space buffer to flush).
      if (log_fd_ >= 0 && !log_failed_) {
        const char* p = buffer.data();
        size_t left = static_cast<size_t>(n);
        while (left > 0) {
          ssize_t w = ::write(log_fd_, p, left);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            spdlog::error("cannot write {}: {}; later markers are lost", log_path_, std::strerror(errno));
            log_failed_ = true;
            break;
          }
          p += w;
          left -= static_cast<size_t>(w);
        }
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // EAGAIN (nothing pending) or end of file
  }
}

void StepRecordHook::on_housekeeping(int64_t /*now_ns*/) { drain(); }

namespace {

nlohmann::json summary_json(const StepSummary& s, const timeline::StepTimeline& timeline, const StepHookOptions& options,
                            const std::vector<std::string>& notes) {
  using nlohmann::json;
  json j;
  j["injected"] = s.injected;
  j["framework"] = s.framework;
  j["source"] = s.source;
  j["marker_lines"] = s.marker_lines;
  j["dropped_markers"] = s.dropped_markers;
  j["steps"] = json::object();
  for (const auto& [mode, count] : s.steps) j["steps"][mode] = count;
  if (!options.step_functions.empty()) j["step_functions"] = options.step_functions;
  json processes = json::array();
  for (const timeline::ProcessTimeline& p : timeline.processes) {
    json steps = json::object();
    for (const timeline::Step& step : p.steps) {
      std::string mode(to_string(step.mode));
      steps[mode] = steps.value(mode, 0) + 1;
    }
    json entry = {{"pid", p.pid}, {"framework", p.framework.empty() ? "python" : p.framework}, {"steps", steps}};
    if (!p.framework_version.empty()) entry["framework_version"] = p.framework_version;
    if (p.dataloader_worker) entry["dataloader_worker"] = p.dataloader_worker->worker_id;
    if (!p.errors.empty()) {
      json errors = json::array();
      for (const auto& e : p.errors) errors.push_back(e.key + ": " + e.message);
      entry["errors"] = errors;
    }
    if (!p.problems.empty()) entry["problems"] = p.problems;
    processes.push_back(entry);
  }
  j["processes"] = processes;
  json files = json::array();
  for (const auto& f : s.trace_files) files.push_back(f.string());
  j["trace_files"] = files;
  if (!notes.empty()) j["notes"] = notes;
  return j;
}

}  // namespace

Status StepRecordHook::on_finish(const fs::path& output_dir, store::Manifest& manifest) {
  if (env_) {
    drain();
    // DataLoader workers and other descendants may still be writing their last lines.
    ::usleep(50'000);
    drain();
    if (log_fd_ >= 0) {
      ::close(log_fd_);
      log_fd_ = -1;
    }
  }
  std::vector<std::string> notes;
  SPROF_TRY(timeline::StepTimeline timeline, timeline::build_profile_timeline(output_dir, &manifest, &notes));

  bool have_marker_steps = false;
  for (const auto& p : timeline.processes) have_marker_steps = have_marker_steps || !p.steps.empty();
  bool have_inferred = false;
  if (!options_.step_functions.empty()) {
    Mode default_mode = Mode::train;
    if (auto m = parse_step_mode(options_.step_fn_mode)) default_mode = *m;
    auto inferred =
        timeline::infer_steps(output_dir, options_.step_functions, timeline, default_mode, env_.has_value());
    if (!inferred.ok()) {
      notes.push_back("--step-fn: " + inferred.error().message);
      spdlog::warn("--step-fn: {}", inferred.error().message);
    } else {
      for (const auto& n : inferred->notes) {
        spdlog::warn("--step-fn: {}", n);
        notes.push_back("--step-fn: " + n);
      }
      if (!inferred->lines.empty()) {
        fs::path file = output_dir / store::kStepFnLog;
        std::error_code ec;
        fs::create_directories(file.parent_path(), ec);
        FILE* f = std::fopen(file.c_str(), "wb");
        bool ok = f != nullptr && std::fwrite(inferred->lines.data(), 1, inferred->lines.size(), f) == inferred->lines.size();
        if (f != nullptr) ok = std::fclose(f) == 0 && ok;
        if (!ok) return make_error(ErrorKind::io, "cannot write {}: {}", file.string(), std::strerror(errno));
        have_inferred = true;
        SPROF_TRY(timeline::StepTimeline merged, timeline::build_profile_timeline(output_dir, &manifest, nullptr));
        timeline = std::move(merged);
      }
    }
  }

  summary_.source = have_marker_steps && have_inferred ? "markers+step-fn"
                    : have_marker_steps                ? "markers"
                    : have_inferred                    ? "step-fn"
                                                       : "";
  summary_.framework = "python";
  for (const auto& p : timeline.processes) {
    if (p.framework == "pytorch") summary_.framework = "pytorch";
    for (const timeline::Step& s : p.steps) ++summary_.steps[std::string(to_string(s.mode))];
    summary_.dropped_markers += p.dropped_markers;
  }
  if (summary_.dropped_markers > 0) {
    spdlog::warn("the target dropped {} step markers (the marker pipe was full); the timeline has gaps",
                 summary_.dropped_markers);
  }

  // GPU work recorded by libsprof_cupti.so joins the steps in the framework trace, so smdebug's
  // readers and the rules see kernels on their gpu_functions lanes.
  std::optional<store::GpuTrace> gpu;
  if (std::error_code ec; fs::is_directory(output_dir / "gpu", ec)) {
    auto read = store::read_gpu_activity(output_dir);
    if (!read.ok()) {
      spdlog::warn("GPU activity left out of the framework trace: {}", read.error().message);
    } else if (!read->ops.empty()) {
      gpu = std::move(*read);
    }
  }
  if (!timeline.processes.empty() || gpu) {
    auto files = timeline::write_step_trace(output_dir, manifest, timeline, gpu ? &*gpu : nullptr);
    if (!files.ok()) {
      spdlog::error("step timeline trace: {}", files.error().message);
      notes.push_back(files.error().message);
    } else {
      for (const auto& f : *files) summary_.trace_files.push_back(fs::relative(f, output_dir));
    }
  }
  manifest.extra.emplace_back("steps", summary_json(summary_, timeline, options_, notes).dump());
  timeline_ = std::move(timeline);
  return {};
}

}  // namespace sprof::bootstrap
