// sprof_timeline_dump PROFILE_DIR: prints, as JSON on stdout, what sprof's own readers make of a
// recorded profile: the framework trace events (store::read_trace_events) and the step timeline
// (timeline::read_step_timeline). Test-only: the record integration tests check real profiles
// through it.

#include <cstdio>

#include <nlohmann/json.hpp>

#include "sprof/step_timeline.hpp"
#include "sprof/trace_events.hpp"

using nlohmann::json;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sprof_timeline_dump PROFILE_DIR\n");
    return 2;
  }
  std::filesystem::path dir = argv[1];
  auto trace = sprof::store::read_trace_events(dir);
  if (!trace.ok()) {
    std::fprintf(stderr, "sprof_timeline_dump: %s\n", trace.error().message.c_str());
    return 1;
  }
  auto timeline = sprof::timeline::read_step_timeline(dir);
  if (!timeline.ok()) {
    std::fprintf(stderr, "sprof_timeline_dump: %s\n", timeline.error().message.c_str());
    return 1;
  }
  json events = json::array();
  for (const auto& e : trace->events) {
    json args = json::object();
    for (const auto& a : e.args.items()) args[a.key] = e.args.text(a.key).value_or("");
    events.push_back({{"name", e.name}, {"lane", e.lane}, {"start_us", e.start_us}, {"end_us", e.end_us},
                      {"node_id", e.node_id}, {"pid", e.pid}, {"file_type", e.file_type()}, {"args", args}});
  }
  json processes = json::array();
  for (const auto& p : timeline->processes) {
    json steps = json::array();
    for (const auto& s : p.steps) {
      steps.push_back({{"mode", sprof::to_string(s.mode)}, {"step", s.step}, {"global_step", s.global_step},
                       {"begin", s.begin_ns}, {"end", s.end_ns},
                       {"forward_pass_end", s.forward_pass_end_ns ? json(*s.forward_pass_end_ns) : json(nullptr)}});
    }
    json intervals = json::array();
    for (const auto& i : p.intervals) intervals.push_back(sprof::timeline::to_string(i.kind));
    processes.push_back({{"pid", p.pid}, {"framework", p.framework}, {"start", p.start_ns}, {"end", p.end_ns},
                         {"steps", steps}, {"intervals", intervals}, {"counters", p.counters.size()},
                         {"instants", p.instants.size()}, {"dataloader_waits", p.dataloader_waits.size()}});
  }
  json out = {{"events", events}, {"warnings", trace->warnings}, {"processes", processes}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
