// Profiling windows and smdebug's profilerconfig.json (see profiling_window.hpp).

#include "sprof/profiling_window.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/stats_dir.hpp"
#include "common/json_text.hpp"
#include "window/python_literal.hpp"

namespace sprof::window {
namespace {

using nlohmann::json;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Keys lower-cased, as smdebug (which lower-cases the whole file) sees them; values untouched.
json lower_keys(const json& object) {
  json out = json::object();
  for (const auto& [key, value] : object.items()) out[lower(key)] = value;
  return out;
}

bool add_overflows(int64_t a, int64_t b) { return b > 0 && a > INT64_MAX - b; }

double unix_s(int64_t monotonic_ns, int64_t offset_ns) { return double(monotonic_ns + offset_ns) / 1e9; }

// smdebug's int(value): ints, integral floats and int() text; not booleans.
Result<std::optional<int64_t>> int_field(const json& config, const char* key, const char* name,
                                         const std::string& where) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<int64_t>();
  if (it->is_number_integer()) return std::optional<int64_t>(it->get<int64_t>());
  if (it->is_number_float()) {
    double v = it->get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e18) return std::optional<int64_t>(int64_t(v));
  } else if (it->is_string()) {
    if (auto v = store::parse_python_int(it->get<std::string>())) return std::optional<int64_t>(*v);
  }
  return make_error(ErrorKind::bad_input, "{}: {} must be an integer, not {}", where, name, it->dump());
}

Result<std::optional<double>> float_field(const json& config, const char* key, const char* name,
                                          const std::string& where) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<double>();
  std::optional<double> v;
  if (it->is_number() && !it->is_boolean()) v = it->get<double>();
  if (it->is_string()) v = store::parse_python_float(it->get<std::string>());
  if (v && std::isfinite(*v)) return v;
  return make_error(ErrorKind::bad_input, "{}: {} must be a finite number, not {}", where, name, it->dump());
}

// The first of several spellings present in the config.
const char* pick(const json& config, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = config.find(key);
    if (it != config.end() && !it->is_null()) return key;
  }
  return *keys.begin();
}

}  // namespace

const char* to_string(PythonProfiler profiler) {
  return profiler == PythonProfiler::cprofile ? "cprofile" : "sampling";
}

std::optional<PythonProfiler> parse_python_profiler(std::string_view text) {
  std::string t = lower(text);
  if (t == "sampling") return PythonProfiler::sampling;
  if (t == "cprofile") return PythonProfiler::cprofile;
  return std::nullopt;
}

const char* to_string(CprofileTimer timer) {
  switch (timer) {
    case CprofileTimer::total_time: return "total_time";
    case CprofileTimer::cpu_time: return "cpu_time";
    case CprofileTimer::off_cpu_time: return "off_cpu_time";
    case CprofileTimer::cycle: return "default";
  }
  return "total_time";
}

std::optional<CprofileTimer> parse_cprofile_timer(std::string_view text) {
  std::string t = lower(text);
  if (t == "total_time") return CprofileTimer::total_time;
  if (t == "cpu_time") return CprofileTimer::cpu_time;
  if (t == "off_cpu_time") return CprofileTimer::off_cpu_time;
  if (t == "default") return CprofileTimer::cycle;
  return std::nullopt;
}

CprofileTimer timer_for_interval(CprofileTimer timer, std::optional<int64_t> start_step) {
  if (timer != CprofileTimer::cycle) return timer;
  // smdebug's cProfileDefaultPythonProfiler: PYTHON_PROFILING_START_STEP_DEFAULT = 9.
  if (start_step == 10) return CprofileTimer::cpu_time;
  if (start_step == 11) return CprofileTimer::off_cpu_time;
  return CprofileTimer::total_time;
}

Result<ProfilingWindow> ProfilingWindow::make(std::optional<int64_t> start_step, std::optional<int64_t> num_steps,
                                              std::optional<double> start_time_s, std::optional<double> duration_s,
                                              std::string_view source) {
  bool steps = start_step || num_steps;
  bool time = start_time_s || duration_s;
  if (steps && time) {
    return make_error(ErrorKind::usage, "{}: a step range and a time range cannot both be given", source);
  }
  if (start_step && *start_step < 0) {
    return make_error(ErrorKind::usage, "{}: the start step must be >= 0, not {}", source, *start_step);
  }
  if (num_steps && *num_steps <= 0) {
    return make_error(ErrorKind::usage, "{}: the number of steps must be > 0, not {}", source, *num_steps);
  }
  if (start_time_s && (!std::isfinite(*start_time_s) || *start_time_s < 0)) {
    return make_error(ErrorKind::usage, "{}: the start time must be Unix epoch seconds >= 0, not {}", source,
                      *start_time_s);
  }
  if (duration_s && (!std::isfinite(*duration_s) || *duration_s <= 0)) {
    return make_error(ErrorKind::usage, "{}: the duration must be > 0 seconds, not {}", source, *duration_s);
  }
  ProfilingWindow w;
  w.kind = steps ? Kind::steps : (time ? Kind::time : Kind::all);
  w.start_step = start_step;
  w.num_steps = num_steps;
  w.start_time_s = start_time_s;
  w.duration_s = duration_s;
  return w;
}

std::string ProfilingWindow::spec() const {
  auto integer = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  auto real = [](const std::optional<double>& v) { return v ? fmt::format("{:.17g}", *v) : std::string("-"); };
  switch (kind) {
    case Kind::all: return "all";
    case Kind::boundaries: return "boundaries";
    case Kind::steps: return fmt::format("steps {} {}", integer(start_step), integer(num_steps));
    case Kind::time: return fmt::format("time {} {}", real(start_time_s), real(duration_s));
  }
  return "all";
}

std::string ProfilingWindow::describe() const {
  switch (kind) {
    case Kind::all: return "every interval";
    case Kind::boundaries: return "pre-step-zero and post-hook-close only";
    case Kind::steps: {
      std::string start = start_step ? std::to_string(*start_step) : "the first step";
      return fmt::format("{} step{} from {}", num_steps.value_or(1), num_steps.value_or(1) == 1 ? "" : "s", start);
    }
    case Kind::time: {
      std::string start = start_time_s ? fmt::format("{:.3f}", *start_time_s) : "the first step";
      if (!duration_s) return fmt::format("the first step at or after {}", start);
      return fmt::format("{} s from {}", *duration_s, start);
    }
  }
  return "";
}

Result<PythonProfilingConfig> read_profiler_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return make_error(ErrorKind::bad_input, "cannot read profiler config {}: {}", file.string(),
                      std::error_code(errno, std::generic_category()).message());
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(ErrorKind::bad_input, "cannot read profiler config {}", file.string());
  return parse_profiler_config(text.str(), file);
}

Result<PythonProfilingConfig> parse_profiler_config(std::string_view text, const std::filesystem::path& source) {
  const std::string file = source.string();
  PythonProfilingConfig out;
  out.file = source;
  if (!store::json_depth_within(text)) {
    return make_error(ErrorKind::bad_input, "profiler config {}: nested deeper than {} levels", file,
                      store::kMaxJsonDepth);
  }
  json top = json::parse(text.begin(), text.end(), nullptr, false);
  if (top.is_discarded()) {
    // For the position: parse again with exceptions, which say where.
    std::string why = "not valid JSON";
    try {
      json again = json::parse(text.begin(), text.end());
      (void)again;
    } catch (const json::exception& e) {
      why = e.what();
    }
    return make_error(ErrorKind::bad_input, "profiler config {}: {}", file, why);
  }
  if (!top.is_object()) return make_error(ErrorKind::bad_input, "profiler config {}: not a JSON object", file);
  top = lower_keys(top);

  if (auto it = top.find("disableprofiler"); it != top.end() && !it->is_null()) {
    bool disabled = false;
    if (it->is_boolean()) {
      disabled = it->get<bool>();
    } else if (it->is_string() && (lower(it->get<std::string>()) == "true" || lower(it->get<std::string>()) == "false")) {
      disabled = lower(it->get<std::string>()) == "true";
    } else {
      return make_error(ErrorKind::bad_input, "profiler config {}: DisableProfiler must be true or false, not {}",
                        file, it->dump());
    }
    if (disabled) {
      out.disabled_reason = "DisableProfiler is true";
      return out;
    }
  }
  auto params_it = top.find("profilingparameters");
  if (params_it == top.end() || params_it->is_null() || (params_it->is_object() && params_it->empty())) {
    out.disabled_reason = "it has no ProfilingParameters";
    return out;
  }
  if (!params_it->is_object()) {
    return make_error(ErrorKind::bad_input, "profiler config {}: ProfilingParameters must be an object, not {}", file,
                      params_it->dump());
  }
  json params = lower_keys(*params_it);
  const std::string where = fmt::format("profiler config {}: ProfilingParameters.PythonProfilingConfig", file);
  auto python_it = params.find("pythonprofilingconfig");
  if (python_it == params.end() || python_it->is_null()) {
    out.disabled_reason = "it has no ProfilingParameters.PythonProfilingConfig";
    return out;
  }
  json python;
  if (python_it->is_string()) {
    auto literal = parse_python_literal(python_it->get<std::string>());
    if (!literal.ok()) {
      return make_error(ErrorKind::bad_input, "{}: not a Python dict literal: {}", where, literal.error().message);
    }
    python = std::move(*literal);
  } else {
    python = *python_it;
  }
  if (!python.is_object()) {
    return make_error(ErrorKind::bad_input, "{}: must be a dict (a string holding a Python dict literal), not {}",
                      where, python.dump());
  }
  if (python.empty()) {
    out.disabled_reason = "its PythonProfilingConfig is empty";
    return out;
  }
  python = lower_keys(python);
  static const char* const kKnown[] = {"startstep",         "numsteps",     "starttimeinsecsinceepoch",
                                       "starttimeinsecunixepoch", "durationinseconds", "duration",
                                       "profilername",      "cprofiletimer"};
  for (const auto& item : python.items()) {
    // A named copy, not a structured binding: clang 14 cannot capture those in a lambda.
    const std::string& key = item.key();
    if (std::find_if(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return key == k; }) ==
        std::end(kKnown)) {
      spdlog::warn("{}: ignoring unknown key {}", where, key);
    }
  }

  SPROF_TRY(auto start_step, int_field(python, "startstep", "StartStep", where));
  SPROF_TRY(auto num_steps, int_field(python, "numsteps", "NumSteps", where));
  const char* start_key = pick(python, {"starttimeinsecsinceepoch", "starttimeinsecunixepoch"});
  SPROF_TRY(auto start_time, float_field(python, start_key, "StartTimeInSecSinceEpoch", where));
  const char* duration_key = pick(python, {"durationinseconds", "duration"});
  SPROF_TRY(auto duration, float_field(python, duration_key, "DurationInSeconds", where));
  if ((start_step || num_steps) && (start_time || duration)) {
    return make_error(ErrorKind::bad_input,
                      "{}: StartStep/NumSteps and StartTimeInSecSinceEpoch/DurationInSeconds are mutually exclusive "
                      "(smdebug disables python profiling for such a config)",
                      where);
  }
  auto window = ProfilingWindow::make(start_step, num_steps, start_time, duration, where);
  if (!window.ok()) return make_error(ErrorKind::bad_input, "{}", window.error().message);
  out.window = *window;
  if (out.window.kind == ProfilingWindow::Kind::all) out.window.kind = ProfilingWindow::Kind::boundaries;

  std::string name = "cprofile";
  if (auto it = python.find("profilername"); it != python.end() && !it->is_null()) {
    if (!it->is_string()) {
      return make_error(ErrorKind::bad_input, "{}: ProfilerName must be \"cprofile\" or \"pyinstrument\", not {}",
                        where, it->dump());
    }
    name = lower(it->get<std::string>());
    if (name == "cprofile") {
      out.profiler = PythonProfiler::cprofile;
    } else if (name == "pyinstrument") {
      out.profiler = PythonProfiler::sampling;
    } else {
      return make_error(ErrorKind::bad_input, "{}: ProfilerName must be \"cprofile\" or \"pyinstrument\", not {}",
                        where, it->dump());
    }
  }
  // smdebug reads cProfileTimer only for cProfile; pyinstrument ignores it, even a bad one.
  if (auto it = python.find("cprofiletimer"); name == "cprofile" && it != python.end() && !it->is_null()) {
    std::optional<CprofileTimer> timer;
    if (it->is_string()) timer = parse_cprofile_timer(it->get<std::string>());
    if (!timer) {
      return make_error(ErrorKind::bad_input,
                        "{}: cProfileTimer must be total_time, cpu_time, off_cpu_time or default, not {}", where,
                        it->dump());
    }
    out.timer = timer;
  }
  out.enabled = true;
  return out;
}

bool ResolvedWindow::contains_step(int64_t global_step, double t_s) const {
  return any_step && min_step <= global_step && global_step < end_step && begin_s <= t_s && t_s < end_s;
}

ResolvedWindow resolve(const ProfilingWindow& window, const timeline::ProcessTimeline& process,
                       int64_t realtime_minus_monotonic_ns) {
  ResolvedWindow r;
  const timeline::Step* first = nullptr;
  for (const auto& s : process.steps) {
    if (first == nullptr || s.begin_ns < first->begin_ns) first = &s;
  }
  switch (window.kind) {
    case ProfilingWindow::Kind::all: break;
    case ProfilingWindow::Kind::boundaries: r.any_step = false; break;
    case ProfilingWindow::Kind::steps: {
      // Missing start: the first step checked; missing count: 1 (PROFILING_NUM_STEPS_DEFAULT).
      int64_t start = window.start_step ? *window.start_step : (first ? first->global_step : 0);
      int64_t num = window.num_steps.value_or(1);
      r.min_step = start;
      r.end_step = add_overflows(start, num) ? INT64_MAX : start + num;
      break;
    }
    case ProfilingWindow::Kind::time: {
      double start = window.start_time_s ? *window.start_time_s
                                         : (first ? unix_s(first->begin_ns, realtime_minus_monotonic_ns) : 0.0);
      r.begin_s = start;
      if (window.duration_s) {
        r.end_s = start + *window.duration_s;
        break;
      }
      // Start time only: the first step boundary checked at or after the start, for one step.
      std::vector<std::pair<int64_t, int64_t>> checks;  // (t_ns, global step) in check order
      for (const auto& s : process.steps) {
        checks.emplace_back(s.begin_ns, s.global_step);
        checks.emplace_back(s.end_ns, s.global_step);
      }
      std::stable_sort(checks.begin(), checks.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      r.any_step = false;
      for (const auto& [t, step] : checks) {
        if (unix_s(t, realtime_minus_monotonic_ns) >= start) {
          r.any_step = true;
          r.end_step = step + 1;
          break;
        }
      }
      break;
    }
  }
  return r;
}

TimelineWindows::TimelineWindows(const ProfilingWindow& window, const timeline::StepTimeline& timeline,
                                 int64_t realtime_minus_monotonic_ns)
    : offset_ns_(realtime_minus_monotonic_ns) {
  for (const auto& process : timeline.processes) {
    windows_[process.pid] = resolve(window, process, realtime_minus_monotonic_ns);
  }
}

bool TimelineWindows::contains(int32_t pid, const timeline::Interval& interval) const {
  auto it = windows_.find(pid);
  return it == windows_.end() || window::contains(it->second, interval, offset_ns_);
}

bool contains(const ResolvedWindow& window, const timeline::Interval& interval, int64_t realtime_minus_monotonic_ns) {
  using timeline::IntervalKind;
  if (interval.kind == IntervalKind::pre_step_zero || interval.kind == IntervalKind::post_hook_close) return true;
  return window.contains_step(interval.start.step.value_or(-1),
                              unix_s(interval.start.t_ns, realtime_minus_monotonic_ns));
}

std::vector<bool> select_intervals(const ProfilingWindow& window, const timeline::ProcessTimeline& process,
                                   int64_t realtime_minus_monotonic_ns) {
  ResolvedWindow resolved = resolve(window, process, realtime_minus_monotonic_ns);
  std::vector<bool> out;
  out.reserve(process.intervals.size());
  for (const auto& interval : process.intervals) {
    out.push_back(contains(resolved, interval, realtime_minus_monotonic_ns));
  }
  return out;
}

bool WindowTracker::active(int64_t global_step, double t_s) {
  switch (window_.kind) {
    case ProfilingWindow::Kind::all: return true;
    case ProfilingWindow::Kind::boundaries: return false;
    case ProfilingWindow::Kind::steps: {
      if (!window_.start_step) window_.start_step = global_step;
      if (!window_.num_steps) window_.num_steps = 1;
      if (!end_step_) {
        end_step_ = add_overflows(*window_.start_step, *window_.num_steps) ? INT64_MAX
                                                                           : *window_.start_step + *window_.num_steps;
      }
      return *window_.start_step <= global_step && global_step < *end_step_;
    }
    case ProfilingWindow::Kind::time: {
      if (!window_.start_time_s) window_.start_time_s = t_s;
      if (window_.duration_s) return *window_.start_time_s <= t_s && t_s < *window_.start_time_s + *window_.duration_s;
      if (*window_.start_time_s <= t_s) {
        if (!end_step_) end_step_ = global_step + 1;
        return global_step < *end_step_;
      }
      return false;
    }
  }
  return false;
}

}  // namespace sprof::window
