// The step timeline as smdebug's framework trace (model_timeline files under framework/pevents/).

#include <algorithm>
#include <functional>
#include <map>

#include "sprof/manifest.hpp"
#include "sprof/profile.hpp"
#include "sprof/step_trace.hpp"
#include "sprof/trace_writer.hpp"

namespace sprof::timeline {
using store::InstantScope;
namespace fs = std::filesystem;

namespace {

char scope_char(InstantScope scope) {
  switch (scope) {
    case InstantScope::global: return 'g';
    case InstantScope::process: return 'p';
    case InstantScope::thread: return 't';
  }
  return 'p';
}

// One event to write; events are written in order of their end so rotation behaves as it does
// for smdebug's writer, which sees events as they finish.
struct PendingEvent {
  int64_t end_us = 0;
  int64_t start_us = 0;
  std::function<Status(store::TraceWriter&)> write;
};

std::string node_id_for(const store::Manifest& manifest, int32_t pid) {
  for (const auto& p : manifest.processes) {
    if (p.pid == pid && !p.node_id.empty()) return p.node_id;
  }
  std::string host = manifest.host.empty() ? "localhost" : manifest.host;
  std::string id = fmt::format("{}-{}", pid, host);
  std::replace(id.begin(), id.end(), '_', '-');
  std::replace(id.begin(), id.end(), '/', '-');
  return id;
}

std::string lane_of(const std::string& domain) { return domain.empty() ? "sprof" : domain; }

// The step whose span holds `t_ns` among `steps` (sorted by begin), if any.
const Step* step_at(const std::vector<Step>& steps, int64_t t_ns) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t_ns, [](int64_t t, const Step& s) { return t < s.begin_ns; });
  if (it == steps.begin()) return nullptr;
  --it;
  return t_ns < it->end_ns ? &*it : nullptr;
}

// Kernels, copies and memsets on smdebug's gpu_functions-dev:<N> lanes, each tied to its launch.
void add_gpu_events(const store::GpuTrace& gpu, const StepTimeline& timeline,
                    const std::function<int64_t(int64_t)>& us,
                    std::map<int32_t, std::vector<PendingEvent>>& by_node_pid) {
  std::map<std::pair<int32_t, int64_t>, const store::GpuApiCall*> launches;  // (pid, correlation)
  for (const auto& call : gpu.api_calls) {
    if (call.correlation != 0) launches.emplace(std::make_pair(call.pid, call.correlation), &call);
  }
  std::map<int32_t, std::vector<Step>> steps;  // per pid, by begin
  for (const ProcessTimeline& p : timeline.processes) {
    auto& v = steps[p.pid] = p.steps;
    std::stable_sort(v.begin(), v.end(), [](const Step& a, const Step& b) { return a.begin_ns < b.begin_ns; });
  }
  for (const store::GpuOp& op : gpu.ops) {
    const int64_t b = us(op.start_ns), e = std::max(b, us(op.end_ns));
    store::TraceArgs args{{"pid", int64_t{op.pid}},
                          {"device", int64_t{op.device}},
                          {"stream", op.stream},
                          {"correlation", op.correlation}};
    int64_t launched_ns = op.start_ns;
    if (auto it = launches.find({op.pid, op.correlation}); op.correlation != 0 && it != launches.end()) {
      const store::GpuApiCall& call = *it->second;
      launched_ns = call.start_ns;
      args.set("event_name", std::string(call.name));
      args.set("start_cpu_thread", int64_t{call.tid});
      args.set("cpu_thread_start_time", us(call.start_ns));
    }
    const Step* s = steps.count(op.pid) != 0 ? step_at(steps[op.pid], launched_ns) : nullptr;
    if (s != nullptr) args.set("step_num", std::to_string(s->step));
    std::string lane = fmt::format("gpu_functions-dev:{}", op.device);
    by_node_pid[op.pid].push_back({e, b, [=, name = std::string(op.name)](store::TraceWriter& w) {
                                     return w.complete(lane, name, b, e - b, args);
                                   }});
  }
}

}  // namespace

Result<std::vector<fs::path>> write_step_trace(const fs::path& profile_dir, const store::Manifest& manifest,
                                               const StepTimeline& timeline, const store::GpuTrace* gpu) {
  std::function<int64_t(int64_t)> us = [&](int64_t t_ns) { return manifest.to_epoch_us(t_ns); };
  std::map<int32_t, std::vector<PendingEvent>> by_node_pid;

  for (const ProcessTimeline& p : timeline.processes) {
    const int64_t pid = p.pid;
    auto& events = by_node_pid[p.pid];
    for (const Step& s : p.steps) {
      const int64_t b = us(s.begin_ns), e = us(s.end_ns);
      const Mode mode = s.mode;
      const int64_t step = s.step;
      events.push_back({e, b, [=](store::TraceWriter& w) { return store::write_step(w, mode, step, b, e, pid); }});
      if (s.forward_pass_end_ns) {
        const int64_t t = us(*s.forward_pass_end_ns);
        events.push_back({t, t, [=](store::TraceWriter& w) {
                            return w.instant(store::step_lane(mode), "forwardpassend", t, 'p',
                                             store::TraceArgs{{"pid", pid}, {"step_num", std::to_string(step)}});
                          }});
      }
    }
    std::map<int64_t, std::string> classes;
    for (const auto& i : p.dataloader_inits) {
      classes[i.iterator] = i.iterator_class;
      const int64_t b = us(i.begin_ns), e = us(i.end_ns);
      events.push_back({e, b, [=, cls = i.iterator_class, workers = int64_t{i.num_workers},
                               pin = i.pin_memory](store::TraceWriter& w) {
                          return store::write_dataloader_init(w, cls, b, e, workers, pin, pid);
                        }});
    }
    for (const auto& d : p.dataloader_waits) {
      const int64_t b = us(d.begin_ns), e = us(d.end_ns);
      std::string cls = !d.iterator_class.empty() ? d.iterator_class
                        : classes.count(d.iterator) ? classes[d.iterator]
                                                    : std::string("DataLoaderIter");
      events.push_back({e, b, [=](store::TraceWriter& w) { return store::write_dataloader_next(w, cls, b, e, pid); }});
    }
    for (const auto& c : p.counters) {
      const int64_t t = us(c.t_ns);
      const int64_t tid = c.tid;
      events.push_back({t, t, [=, lane = lane_of(c.domain), name = c.name, value = c.value](store::TraceWriter& w) {
                          return w.instant(lane, name, t, 'p',
                                           store::TraceArgs{{"value", value}, {"pid", pid}, {"tid", tid}});
                        }});
    }
    for (const auto& i : p.instants) {
      const int64_t t = us(i.t_ns);
      const int64_t tid = i.tid;
      const char scope = scope_char(i.scope);
      events.push_back({t, t, [=, lane = lane_of(i.domain), name = i.name](store::TraceWriter& w) {
                          return w.instant(lane, name, t, scope, store::TraceArgs{{"pid", pid}, {"tid", tid}});
                        }});
    }
    for (const auto& r : p.ranges) {
      const int64_t b = us(r.begin_ns), e = us(r.end_ns);
      const int64_t tid = r.tid;
      events.push_back({e, b, [=, lane = lane_of(r.domain), name = r.name, kind = std::string(store::to_string(r.kind))](
                                  store::TraceWriter& w) {
                          return w.complete(lane, name, b, e - b,
                                            store::TraceArgs{{"pid", pid}, {"tid", tid}, {"kind", kind}});
                        }});
    }
    if (p.dataloader_worker) {
      const auto& wk = *p.dataloader_worker;
      const int64_t b = us(wk.begin_ns), e = us(wk.end_ns.value_or(p.end_ns));
      const int64_t worker_id = wk.worker_id;
      // The worker's lane belongs with the training process that owns the DataLoader.
      int32_t owner = timeline.find(wk.parent_pid) != nullptr ? wk.parent_pid : p.pid;
      by_node_pid[owner].push_back({e, b, [=](store::TraceWriter& w) {
                                      return store::write_dataloader_worker(w, "_worker_loop", b, e, pid, worker_id);
                                    }});
    }
  }

  if (gpu != nullptr) add_gpu_events(*gpu, timeline, us, by_node_pid);

  int64_t base_us = us(manifest.start_ns);
  for (const auto& [pid, events] : by_node_pid) {
    for (const auto& e : events) base_us = std::min(base_us, e.start_us);
  }
  std::vector<fs::path> files;
  for (auto& [pid, events] : by_node_pid) {
    if (events.empty()) continue;
    std::stable_sort(events.begin(), events.end(),
                     [](const PendingEvent& a, const PendingEvent& b) { return a.end_us < b.end_us; });
    store::TraceWriterOptions options;
    options.profile_dir = profile_dir;
    options.node_id = node_id_for(manifest, pid);
    // From sprof.json: it names the trace files.
    SPROF_TRY_STATUS(store::check_path_component(
        options.node_id, fmt::format("{}: node_id of pid {}", (profile_dir / store::kManifestFileName).string(), pid)));
    options.suffix = std::string(store::kModelTimelineSuffix);
    options.base_us = base_us;
    SPROF_TRY(store::TraceWriter writer, store::TraceWriter::create(options));
    for (const auto& e : events) SPROF_TRY_STATUS(e.write(writer));
    SPROF_TRY_STATUS(writer.close());
    files.insert(files.end(), writer.files().begin(), writer.files().end());
  }
  return files;
}

}  // namespace sprof::timeline
