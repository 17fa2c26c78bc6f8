// sprof_marker_probe: runs a command with sprof's bootstrap and marker channel (what `record`
// does, without sampling) and prints what came back as JSON: the markers, the parser's problems
// and the step timeline. Test-only: the integration tests and scripts/bench-markers drive it.
//
//   sprof_marker_probe [--dir DIR] [--json FILE] [--no-torch] [--no-inject] [--markers-only]
//                      -- COMMAND [ARGS...]
// The JSON goes to FILE (default: stdout, which the command shares).

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "sprof/bootstrap.hpp"
#include "sprof/markers.hpp"
#include "sprof/step_timeline.hpp"

extern char** environ;

namespace {

using nlohmann::json;
using namespace sprof::bootstrap;
using namespace sprof::store;
using namespace sprof::timeline;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

const char* outcome_name(DataLoaderOutcome o) {
  switch (o) {
    case DataLoaderOutcome::ok: return "ok";
    case DataLoaderOutcome::stop: return "stop";
    case DataLoaderOutcome::error: return "error";
  }
  return "?";
}

const char* scope_name(InstantScope s) {
  switch (s) {
    case InstantScope::global: return "global";
    case InstantScope::process: return "process";
    case InstantScope::thread: return "thread";
  }
  return "?";
}

json step_json(sprof::Mode mode, int64_t step, int64_t global_step) {
  return {{"mode", to_string(mode)}, {"step", step}, {"global_step", global_step}};
}

json marker_json(const Marker& m) {
  json j = {{"kind", kind_name(m.data)}, {"t", m.t_ns}, {"pid", m.pid}, {"tid", m.tid}};
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, Hello>) {
          j.update({{"version", d.version}, {"ppid", d.parent_pid}, {"reason", d.reason},
                    {"python", d.python_version}, {"executable", d.executable}});
        } else if constexpr (std::is_same_v<T, StepBegin> || std::is_same_v<T, StepEnd> ||
                             std::is_same_v<T, ForwardPassEnd>) {
          j.update(step_json(d.mode, d.step, d.global_step));
        } else if constexpr (std::is_same_v<T, ModeChange>) {
          j["mode"] = to_string(d.mode);
        } else if constexpr (std::is_same_v<T, Pause> || std::is_same_v<T, Resume> ||
                             std::is_same_v<T, Close>) {
          j["reason"] = d.reason;
        } else if constexpr (std::is_same_v<T, Counter>) {
          j.update({{"domain", d.domain}, {"name", d.name}, {"value", d.value}});
        } else if constexpr (std::is_same_v<T, Instant>) {
          j.update({{"domain", d.domain}, {"name", d.name}, {"scope", scope_name(d.scope)}});
        } else if constexpr (std::is_same_v<T, Framework>) {
          j.update({{"name", d.name}, {"version", d.version}});
        } else if constexpr (std::is_same_v<T, DataLoaderInit>) {
          j.update({{"begin", d.begin_ns}, {"iterator", d.iterator}, {"class", d.iterator_class},
                    {"num_workers", d.num_workers}, {"pin_memory", d.pin_memory}});
        } else if constexpr (std::is_same_v<T, DataLoaderNext>) {
          j.update({{"begin", d.begin_ns}, {"iterator", d.iterator}, {"outcome", outcome_name(d.outcome)}});
        } else if constexpr (std::is_same_v<T, WorkerStart> || std::is_same_v<T, WorkerStop>) {
          j.update({{"worker_id", d.worker_id}, {"ppid", d.parent_pid}});
        } else if constexpr (std::is_same_v<T, ReportedError>) {
          j.update({{"key", d.key}, {"message", d.message}});
        } else if constexpr (std::is_same_v<T, Dropped>) {
          j["count"] = d.count;
        }
      },
      m.data);
  return j;
}

json boundary_json(const Boundary& b) {
  json j = {{"mode", to_string(b.mode)}, {"phase", to_string(b.phase)}, {"t", b.t_ns}};
  j["step"] = b.step ? json(*b.step) : json("*");
  return j;
}

json process_json(const ProcessTimeline& p) {
  json steps = json::array();
  for (const Step& s : p.steps) {
    json j = step_json(s.mode, s.step, s.global_step);
    j.update({{"begin", s.begin_ns}, {"end", s.end_ns}, {"tid", s.tid}, {"ended_by_marker", s.ended_by_marker}});
    j["forward_pass_end"] = s.forward_pass_end_ns ? json(*s.forward_pass_end_ns) : json(nullptr);
    steps.push_back(j);
  }
  json intervals = json::array();
  for (const Interval& i : p.intervals) {
    json j = {{"kind", to_string(i.kind)}, {"start", boundary_json(i.start)}, {"end", boundary_json(i.end)}};
    if (i.forward_pass_end_ns) j["forward_pass_end"] = *i.forward_pass_end_ns;
    intervals.push_back(j);
  }
  json waits = json::array();
  for (const auto& w : p.dataloader_waits) {
    waits.push_back({{"begin", w.begin_ns}, {"end", w.end_ns}, {"iterator", w.iterator},
                     {"class", w.iterator_class}, {"outcome", outcome_name(w.outcome)}});
  }
  json inits = json::array();
  for (const auto& i : p.dataloader_inits) {
    inits.push_back({{"begin", i.begin_ns}, {"end", i.end_ns}, {"iterator", i.iterator}, {"class", i.iterator_class},
                     {"num_workers", i.num_workers}, {"pin_memory", i.pin_memory}});
  }
  json paused = json::array();
  for (const auto& r : p.paused) paused.push_back({r.begin_ns, r.end_ns});
  json modes = json::array();
  for (const auto& c : p.mode_changes) modes.push_back({{"t", c.t_ns}, {"mode", to_string(c.mode)}});
  json counters = json::array();
  for (const auto& c : p.counters) {
    counters.push_back({{"t", c.t_ns}, {"domain", c.domain}, {"name", c.name}, {"value", c.value}});
  }
  json instants = json::array();
  for (const auto& i : p.instants) {
    instants.push_back({{"t", i.t_ns}, {"domain", i.domain}, {"name", i.name}, {"scope", scope_name(i.scope)}});
  }
  json errors = json::array();
  for (const auto& e : p.errors) errors.push_back({{"key", e.key}, {"message", e.message}});
  json j = {{"pid", p.pid}, {"ppid", p.parent_pid}, {"start_reason", p.start_reason},
            {"python", p.python_version}, {"framework", p.framework},
            {"framework_version", p.framework_version}, {"start", p.start_ns}, {"end", p.end_ns},
            {"steps", steps}, {"intervals", intervals}, {"dataloader_waits", waits},
            {"dataloader_inits", inits}, {"paused", paused}, {"mode_changes", modes},
            {"counters", counters}, {"instants", instants}, {"errors", errors},
            {"dropped", p.dropped_markers}, {"problems", p.problems}};
  j["close"] = p.close_ns ? json(*p.close_ns) : json(nullptr);
  if (p.dataloader_worker) {
    const auto& w = *p.dataloader_worker;
    j["worker"] = {{"worker_id", w.worker_id}, {"ppid", w.parent_pid}, {"begin", w.begin_ns},
                   {"end", w.end_ns ? json(*w.end_ns) : json(nullptr)}};
  }
  return j;
}

int usage() {
  std::fprintf(stderr,
               "usage: sprof_marker_probe [--dir DIR] [--json FILE] [--no-torch] [--no-inject] "
               "[--markers-only] -- COMMAND [ARGS...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir;
  std::string json_path;
  PrepareOptions options;
  bool inject = true;
  bool markers_only = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--no-torch") {
      options.torch = false;
    } else if (arg == "--no-inject") {
      inject = false;
    } else if (arg == "--markers-only") {
      markers_only = true;
    } else {
      return usage();
    }
  }
  if (i >= argc) return usage();
  bool own_dir = dir.empty();
  if (own_dir) {
    char pattern[] = "/tmp/sprof-probe-XXXXXX";
    if (!mkdtemp(pattern)) {
      std::perror("mkdtemp");
      return 1;
    }
    dir = pattern;
  }

  std::optional<BootstrapEnv> env;
  std::vector<std::string> environment;
  if (inject) {
    auto prepared = prepare(dir / "bootstrap", options);
    if (!prepared.ok()) {
      std::fprintf(stderr, "sprof_marker_probe: %s\n", prepared.error().message.c_str());
      return 1;
    }
    env.emplace(std::move(prepared).value());
    environment = env->environment(environ);
  } else {
    for (char** e = environ; *e; ++e) environment.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    if (env && env->channel.inherit_in_child() != 0) _exit(127);
    execvpe(argv[i], argv + i, envp.data());
    _exit(127);
  }

  std::vector<Marker> markers;
  int status = 0;
  int64_t exit_ns = 0;
  for (;;) {
    // Drain on a timer, as the recorder should: a reader blocked in poll() on the pipe makes
    // every marker write pay for waking it up.
    usleep(20'000);
    if (env) {
      if (auto drained = env->channel.drain(markers); !drained.ok()) {
        std::fprintf(stderr, "sprof_marker_probe: %s\n", drained.error().message.c_str());
      }
    }
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      exit_ns = monotonic_ns();
      break;
    }
  }
  if (env) {
    // Grandchildren (DataLoader workers) may still be writing their last lines.
    usleep(100'000);
    (void)env->channel.drain(markers);
    env->channel.finish();
  }

  json out;
  out["exit_code"] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  out["pid"] = child;
  out["exit_ns"] = exit_ns;
  json list = json::array();
  for (const Marker& m : markers) list.push_back(marker_json(m));
  out["markers"] = list;
  if (env) {
    const auto& stats = env->channel.parser().stats();
    out["parser"] = {{"lines", stats.lines}, {"markers", stats.markers}, {"skipped", stats.skipped},
                     {"problems", env->channel.parser().problems()}};
  }
  if (!markers_only) {
    StepTimelineBuilder builder;
    builder.add(markers);
    builder.set_process_exit(child, exit_ns);
    json processes = json::array();
    for (const ProcessTimeline& p : builder.build().processes) processes.push_back(process_json(p));
    out["processes"] = processes;
  }
  FILE* json_out = json_path.empty() ? stdout : std::fopen(json_path.c_str(), "w");
  if (!json_out) {
    std::perror(json_path.c_str());
    return 1;
  }
  std::fprintf(json_out, "%s\n", out.dump().c_str());
  if (json_out != stdout) std::fclose(json_out);
  if (own_dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
