// torch.profiler's schedule over each process's training steps, and the tracker that turns a
// recording's markers into the windows whose traces are due.

#include <charconv>
#include <variant>

#include "sprof/trace_windows.hpp"

namespace sprof::traces {

Result<TraceSchedule> parse_trace_schedule(std::string_view text) {
  TraceSchedule s;
  if (text.empty()) return make_error(ErrorKind::usage, "--trace-schedule: empty (give e.g. wait=1,warmup=1,active=3)");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return make_error(ErrorKind::usage, "--trace-schedule: '{}' is not word=number", item);
    }
    std::string_view word = item.substr(0, eq);
    std::string_view number = item.substr(eq + 1);
    int64_t* field = word == "wait"         ? &s.wait
                     : word == "warmup"     ? &s.warmup
                     : word == "active"     ? &s.active
                     : word == "repeat"     ? &s.repeat
                     : word == "skip_first" ? &s.skip_first
                                            : nullptr;
    if (field == nullptr) {
      return make_error(ErrorKind::usage,
                        "--trace-schedule: unknown word '{}' (wait, warmup, active, repeat, skip_first)", word);
    }
    int64_t value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size() || value < 0) {
      return make_error(ErrorKind::usage, "--trace-schedule: {}={} is not a whole number >= 0", word, number);
    }
    // Bounded so that a cycle (wait + warmup + active) and skip_first + repeat cycles stay far
    // from int64's end: no job runs 10^12 steps.
    constexpr int64_t kMaxSteps = 1'000'000'000'000;
    if (value > kMaxSteps) {
      return make_error(ErrorKind::usage, "--trace-schedule: {}={} is over {} steps", word, number, kMaxSteps);
    }
    *field = value;
  }
  if (s.active < 1) return make_error(ErrorKind::usage, "--trace-schedule: active must be at least 1");
  return s;
}

ScheduleAction schedule_action(const TraceSchedule& s, int64_t step) {
  if (step < s.skip_first) return ScheduleAction::none;
  step -= s.skip_first;
  const int64_t cycle = s.wait + s.warmup + s.active;
  if (s.repeat > 0 && step / cycle >= s.repeat) return ScheduleAction::none;
  const int64_t at = step % cycle;
  if (at < s.wait) return ScheduleAction::none;
  if (at < s.wait + s.warmup) return ScheduleAction::warmup;
  return at < cycle - 1 ? ScheduleAction::record : ScheduleAction::record_and_save;
}

namespace {

// The steps the schedule counts: training ones, or those given no mode at all.
bool counted(Mode mode) { return mode == Mode::train || mode == Mode::global; }

}  // namespace

void ScheduleTracker::close(int32_t pid, Process& p, int64_t end_ns, bool complete, std::vector<TraceWindow>& out) {
  if (!p.open) return;
  TraceWindow w;
  w.pid = pid;
  w.begin_ns = p.open->begin_ns;
  w.end_ns = std::max(end_ns, p.open->begin_ns);
  w.complete = complete;
  w.first_step = p.open->first_step;
  w.vars.epoch = p.epoch;
  w.vars.batch = p.counted;
  w.vars.batch_in_epoch = p.batch_in_epoch;
  w.vars.step = p.open->last_step;
  w.vars.mode = std::string(to_string(p.open->mode));
  w.vars.pid = pid;
  out.push_back(std::move(w));
  p.open.reset();
}

void ScheduleTracker::add(const store::Marker& m, std::vector<TraceWindow>& out) {
  Process& p = processes_[m.pid];
  p.last_ns = std::max(p.last_ns, m.t_ns);
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, store::StepBegin>) {
          // A step begins: the window's last step (if it had begun) is over.
          if (p.open && p.open->closing) close(m.pid, p, m.t_ns, true, out);
          p.mode = d.mode;
          if (!counted(d.mode)) return;
          ScheduleAction action = schedule_action(schedule_, p.counted);
          ++p.counted;
          ++p.batch_in_epoch;
          if (action != ScheduleAction::record && action != ScheduleAction::record_and_save) return;
          if (!p.open) p.open = Open{m.t_ns, d.step, d.step, d.mode, false};
          p.open->last_step = d.step;
          p.open->mode = d.mode;
          p.open->closing = action == ScheduleAction::record_and_save;
        } else if constexpr (std::is_same_v<T, store::StepEnd>) {
          if (p.open && p.open->closing && d.step == p.open->last_step) close(m.pid, p, m.t_ns, true, out);
        } else if constexpr (std::is_same_v<T, store::ModeChange>) {
          if (p.open && p.open->closing) close(m.pid, p, m.t_ns, true, out);
          p.mode = d.mode;
        } else if constexpr (std::is_same_v<T, store::Close>) {
          if (p.open) close(m.pid, p, m.t_ns, p.open->closing, out);
        } else if constexpr (std::is_same_v<T, store::Counter>) {
          if (d.domain != kEpochCounterDomain || d.name != kEpochCounterName) return;
          auto epoch = static_cast<int64_t>(d.value);
          if (!p.explicit_epoch || epoch != p.epoch) p.batch_in_epoch = 0;
          p.explicit_epoch = true;
          p.epoch = epoch;
        } else if constexpr (std::is_same_v<T, store::DataLoaderInit>) {
          // A new pass over a DataLoader begun in training (or no) mode starts an epoch.
          if (p.explicit_epoch || !counted(p.mode)) return;
          ++p.loader_passes;
          p.epoch = p.loader_passes - 1;
          p.batch_in_epoch = 0;
        }
      },
      m.data);
}

void ScheduleTracker::process_ended(int32_t pid, int64_t end_ns, std::vector<TraceWindow>& out) {
  auto it = processes_.find(pid);
  if (it == processes_.end() || !it->second.open) return;
  Process& p = it->second;
  close(pid, p, std::max(end_ns, p.last_ns), p.open->closing, out);
}

void ScheduleTracker::finish(int64_t end_ns, std::vector<TraceWindow>& out) {
  for (auto& [pid, p] : processes_) {
    if (p.open) close(pid, p, std::max(end_ns, p.last_ns), p.open->closing, out);
  }
}

}  // namespace sprof::traces
