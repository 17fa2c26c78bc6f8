// Markers -> per-process steps and intervals (see sprof/step_timeline.hpp for the tiling).

#include "sprof/step_timeline.hpp"

#include <algorithm>
#include <map>

namespace sprof::timeline {

// The markers' vocabulary (markers.hpp), which this file turns into the timeline.
using store::Close;
using store::Counter;
using store::DataLoaderInit;
using store::DataLoaderNext;
using store::Dropped;
using store::ForwardPassEnd;
using store::Framework;
using store::Hello;
using store::Instant;
using store::Marker;
using store::ModeChange;
using store::Pause;
using store::Range;
using store::ReportedError;
using store::Resume;
using store::StepBegin;
using store::StepEnd;
using store::WorkerStart;
using store::WorkerStop;

namespace {

class ProcessBuilder {
 public:
  explicit ProcessBuilder(int32_t pid) { p_.pid = pid; }

  void add(const Marker& m) {
    if (!have_first_) {
      first_t_ = m.t_ns;
      have_first_ = true;
    }
    last_t_ = std::max(last_t_, m.t_ns);
    std::visit([&](const auto& data) { on(m, data); }, m.data);
  }

  ProcessTimeline finish(std::optional<int64_t> exit_ns) && {
    p_.end_ns = std::max(last_t_, exit_ns.value_or(last_t_));
    // Markers are added in time order, so first_t_ is the earliest; a hello stamped after
    // another marker of its process (clock read before the hello was written) must not start
    // the process after its first step.
    p_.start_ns = have_hello_ ? std::min(p_.start_ns, first_t_) : first_t_;
    if (open_) end_step(p_.end_ns, false);
    if (pause_begin_) p_.paused.push_back({*pause_begin_, p_.end_ns});
    build_intervals();
    return std::move(p_);
  }

 private:
  void problem(const Marker& m, std::string text) {
    if (p_.problems.size() < 20) p_.problems.push_back(fmt::format("t={} ns: {}", m.t_ns, text));
  }

  void end_step(int64_t t, bool by_marker) {
    open_->end_ns = t;
    open_->ended_by_marker = by_marker;
    p_.steps.push_back(*open_);
    open_.reset();
  }

  void on(const Marker& m, const Hello& h) {
    if (have_hello_) {
      problem(m, "a second hello for this pid (exec of a new interpreter?); kept the first");
      return;
    }
    have_hello_ = true;
    p_.start_ns = m.t_ns;
    p_.parent_pid = h.parent_pid;
    p_.start_reason = h.reason;
    p_.python_version = h.python_version;
    p_.executable = h.executable;
  }
  void on(const Marker& m, const StepBegin& s) {
    if (closed_) return problem(m, "step begin after hook close ignored");
    if (open_) end_step(m.t_ns, false);
    open_ = Step{s.mode, s.step, s.global_step, m.t_ns, std::nullopt, m.t_ns, m.tid, true};
  }
  void on(const Marker& m, const ForwardPassEnd& f) {
    if (!open_ || open_->global_step != f.global_step) {
      if (!closed_) problem(m, fmt::format("forwardpassend of step {} outside it", f.global_step));
      return;
    }
    if (!open_->forward_pass_end_ns) open_->forward_pass_end_ns = m.t_ns;
  }
  void on(const Marker& m, const StepEnd& s) {
    if (!open_ || open_->global_step != s.global_step) {
      if (!closed_) problem(m, fmt::format("end of step {} that is not open", s.global_step));
      return;
    }
    end_step(m.t_ns, true);
  }
  void on(const Marker& m, const ModeChange& c) {
    p_.mode_changes.push_back({m.t_ns, c.mode});
    if (open_ && open_->mode != c.mode) end_step(m.t_ns, false);
  }
  void on(const Marker& m, const Pause&) {
    if (!pause_begin_) pause_begin_ = m.t_ns;
  }
  void on(const Marker& m, const Resume&) {
    if (pause_begin_) p_.paused.push_back({*pause_begin_, m.t_ns});
    pause_begin_.reset();
  }
  void on(const Marker& m, const Counter& c) {
    p_.counters.push_back({m.t_ns, m.tid, c.domain, c.name, c.value});
  }
  void on(const Marker& m, const Instant& i) {
    p_.instants.push_back({m.t_ns, m.tid, i.domain, i.name, i.scope});
  }
  void on(const Marker&, const Framework& f) {
    p_.framework = f.name;
    p_.framework_version = f.version;
  }
  void on(const Marker& m, const DataLoaderInit& d) {
    p_.dataloader_inits.push_back(
        {d.begin_ns, m.t_ns, m.tid, d.iterator, d.iterator_class, d.num_workers, d.pin_memory});
    iterator_classes_[d.iterator] = d.iterator_class;
  }
  void on(const Marker& m, const DataLoaderNext& d) {
    auto it = iterator_classes_.find(d.iterator);
    p_.dataloader_waits.push_back({d.begin_ns, m.t_ns, m.tid, d.iterator,
                                   it == iterator_classes_.end() ? std::string() : it->second, d.outcome});
  }
  void on(const Marker& m, const WorkerStart& w) {
    p_.dataloader_worker = DataLoaderWorker{w.worker_id, w.parent_pid, m.t_ns, std::nullopt};
  }
  void on(const Marker& m, const WorkerStop& w) {
    if (!p_.dataloader_worker) {
      p_.dataloader_worker = DataLoaderWorker{w.worker_id, w.parent_pid, p_.start_ns, std::nullopt};
    }
    p_.dataloader_worker->end_ns = m.t_ns;
  }
  void on(const Marker& m, const Close&) {
    if (closed_) return;
    closed_ = true;
    p_.close_ns = m.t_ns;
    if (open_) end_step(m.t_ns, false);
  }
  void on(const Marker&, const ReportedError& e) { p_.errors.push_back(e); }
  void on(const Marker&, const Dropped& d) { p_.dropped_markers += d.count; }
  void on(const Marker& m, const Range& r) {
    p_.ranges.push_back({std::min(r.begin_ns, m.t_ns), m.t_ns, m.tid, r.kind, r.domain, r.name});
  }

  void build_intervals() {
    auto& out = p_.intervals;
    const Boundary process_start{Mode::prestepzero, std::nullopt, Phase::start, p_.start_ns};
    const Boundary process_end{Mode::posthookclose, std::nullopt, Phase::end, p_.end_ns};
    if (p_.steps.empty()) {
      out.push_back({IntervalKind::pre_step_zero, process_start, process_end, std::nullopt});
      return;
    }
    auto begin_of = [](const Step& s) {
      return Boundary{s.mode, s.global_step, Phase::stepstart, s.begin_ns};
    };
    auto end_of = [](const Step& s) {
      return Boundary{s.mode, s.global_step, Phase::stepend, s.end_ns};
    };
    out.push_back({IntervalKind::pre_step_zero, process_start, begin_of(p_.steps.front()), std::nullopt});
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      const Step& s = p_.steps[i];
      if (i > 0) {
        const Step& prev = p_.steps[i - 1];
        if (s.begin_ns > prev.end_ns) {
          out.push_back({prev.mode == s.mode ? IntervalKind::between_steps : IntervalKind::between_modes,
                         end_of(prev), begin_of(s), std::nullopt});
        }
      }
      out.push_back({IntervalKind::step, begin_of(s), end_of(s), s.forward_pass_end_ns});
    }
    out.push_back({IntervalKind::post_hook_close, end_of(p_.steps.back()), process_end, std::nullopt});
  }

  ProcessTimeline p_;
  bool have_first_ = false;
  bool have_hello_ = false;
  bool closed_ = false;
  int64_t first_t_ = 0;
  int64_t last_t_ = 0;
  std::optional<Step> open_;
  std::optional<int64_t> pause_begin_;
  std::map<int64_t, std::string> iterator_classes_;
};

}  // namespace

const char* to_string(IntervalKind kind) {
  switch (kind) {
    case IntervalKind::pre_step_zero: return "pre_step_zero";
    case IntervalKind::step: return "step";
    case IntervalKind::between_steps: return "between_steps";
    case IntervalKind::between_modes: return "between_modes";
    case IntervalKind::post_hook_close: return "post_hook_close";
  }
  return "step";
}

const ProcessTimeline* StepTimeline::find(int32_t pid) const {
  auto it = std::lower_bound(processes.begin(), processes.end(), pid,
                             [](const ProcessTimeline& p, int32_t v) { return p.pid < v; });
  return it != processes.end() && it->pid == pid ? &*it : nullptr;
}

void StepTimelineBuilder::add(const Marker& marker) { markers_.push_back(marker); }

void StepTimelineBuilder::add(std::span<const Marker> markers) {
  markers_.insert(markers_.end(), markers.begin(), markers.end());
}

void StepTimelineBuilder::set_process_exit(int32_t pid, int64_t t_ns) { exits_.emplace_back(pid, t_ns); }

StepTimeline StepTimelineBuilder::build() const {
  // Per pid, in time order; markers of one thread arrive in order, so a stable sort keeps the
  // writer's order for equal timestamps (a step end and the next begin share one).
  std::map<int32_t, std::vector<const Marker*>> by_pid;
  for (const Marker& m : markers_) by_pid[m.pid].push_back(&m);
  StepTimeline timeline;
  for (auto& [pid, list] : by_pid) {
    std::stable_sort(list.begin(), list.end(),
                     [](const Marker* a, const Marker* b) { return a->t_ns < b->t_ns; });
    ProcessBuilder builder(pid);
    for (const Marker* m : list) builder.add(*m);
    std::optional<int64_t> exit_ns;
    for (const auto& [exit_pid, t] : exits_) {
      if (exit_pid == pid) exit_ns = t;
    }
    timeline.processes.push_back(std::move(builder).finish(exit_ns));
  }
  return timeline;
}

StepTimeline build_step_timeline(std::span<const Marker> markers) {
  StepTimelineBuilder builder;
  builder.add(markers);
  return builder.build();
}

}  // namespace sprof::timeline
