// Reader of smdebug's framework trace files (see sprof/trace_events.hpp).

#include "sprof/layout.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/trace_events.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <system_error>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/json_text.hpp"

namespace fs = std::filesystem;

namespace sprof::store {

void TraceArgs::set(std::string key, ArgValue value) {
  for (auto& item : items_) {
    if (item.key == key) {
      item.value = std::move(value);
      return;
    }
  }
  items_.push_back(TraceArg{std::move(key), std::move(value)});
}

const ArgValue* TraceArgs::find(std::string_view key) const {
  for (const auto& item : items_) {
    if (item.key == key) return &item.value;
  }
  return nullptr;
}

std::optional<std::string> TraceArgs::text(std::string_view key) const {
  const ArgValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (std::holds_alternative<std::monostate>(*v)) return std::string("None");
  if (auto b = std::get_if<bool>(v)) return std::string(*b ? "True" : "False");
  if (auto i = std::get_if<int64_t>(v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(v)) {
    std::string out;
    append_python_float(out, *d);
    return out;
  }
  return std::get<std::string>(*v);
}

std::optional<int64_t> TraceArgs::integer(std::string_view key) const {
  const ArgValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto i = std::get_if<int64_t>(v)) return *i;
  if (auto d = std::get_if<double>(v)) {
    // Whole and within int64's range (2^63 itself is not): anything else is not an integer.
    if (std::isfinite(*d) && std::floor(*d) == *d && *d >= -9223372036854775808.0 && *d < 9223372036854775808.0) {
      return static_cast<int64_t>(*d);
    }
    return std::nullopt;
  }
  if (auto s = std::get_if<std::string>(v)) {
    if (s->empty()) return std::nullopt;
    size_t used = 0;
    try {
      int64_t value = std::stoll(*s, &used);
      if (used == s->size()) return value;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

const char* TraceEvent::file_type() const {
  switch (source) {
    case TraceSource::python_timeline: return "PythontimelineMetrics";
    case TraceSource::model_timeline: return "DetailedframeworkMetrics";
    case TraceSource::horovod: return "";
    case TraceSource::smdataparallel: return "SMDataParallelMetrics";
  }
  return "";
}

std::optional<TraceFileName> parse_trace_file_name(const fs::path& path) {
  std::string text = path.generic_string();
  std::string name = path.filename().string();
  if (name.size() < 5 || name.substr(name.size() - 5) != ".json") return std::nullopt;
  if (text.find(kTraceEventsDir) == std::string::npos) return std::nullopt;
  size_t first = name.find('_');
  if (first == std::string::npos) return std::nullopt;
  size_t second = name.find('_', first + 1);
  if (second == std::string::npos) return std::nullopt;
  std::string stamp = name.substr(0, first);
  if (stamp.empty() || stamp.size() > 19 || !std::all_of(stamp.begin(), stamp.end(), ::isdigit)) return std::nullopt;
  TraceFileName out;
  out.end_us = std::stoll(stamp);
  out.node_id = name.substr(first + 1, second - first - 1);
  out.suffix = name.substr(second + 1);
  return out;
}

std::optional<TraceSource> trace_source_for(std::string_view file_name) {
  // Checked in smdebug's order (AlgorithmMetricsReader._get_event_parser).
  if (file_name.find(kPythonTimelineSuffix) != std::string_view::npos) return TraceSource::python_timeline;
  if (file_name.find(kModelTimelineSuffix) != std::string_view::npos) return TraceSource::model_timeline;
  if (file_name.find(kHorovodTimelineSuffix) != std::string_view::npos) return TraceSource::horovod;
  if (file_name.find(kSmDataParallelTimelineSuffix) != std::string_view::npos) return TraceSource::smdataparallel;
  return std::nullopt;
}

std::string normalize_node_id(std::string_view node_id) {
  // `(.*)-(algo.*)` with a greedy first group: split at the last "-algo".
  size_t pos = node_id.rfind("-algo");
  if (pos == std::string_view::npos) return std::string(node_id);
  return fmt::format("{}-{}", node_id.substr(pos + 1), node_id.substr(0, pos));
}

NodeIdParts split_node_id(std::string_view id) {
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (digits(id)) return {std::string(id), ""};
  size_t first = id.find('-');
  if (first != std::string_view::npos && digits(id.substr(0, first))) {
    return {std::string(id.substr(0, first)), std::string(id.substr(first + 1))};
  }
  size_t last = id.rfind('-');
  // "algo-1-51", not "algo-1" (a host alone: its number is the node's, not a process's).
  if (last != std::string_view::npos && digits(id.substr(last + 1)) && id.substr(0, last).find('-') != std::string_view::npos) {
    return {std::string(id.substr(last + 1)), std::string(id.substr(0, last))};
  }
  return {"", std::string(id)};
}

namespace {

ArgValue to_arg_value(const nlohmann::json& v) {
  if (v.is_null()) return std::monostate{};
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_float()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

TraceArgs to_args(const nlohmann::json& event) {
  TraceArgs args;
  auto it = event.find("args");
  if (it == event.end() || !it->is_object()) return args;
  args.reserve(it->size());
  for (const auto& [key, value] : it->items()) args.set(key, to_arg_value(value));
  return args;
}

std::optional<int64_t> integer_field(const nlohmann::json& event, const char* key) {
  auto it = event.find(key);
  if (it == event.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (!std::isfinite(d)) return std::nullopt;
    return static_cast<int64_t>(std::llround(d));
  }
  if (it->is_number_unsigned()) return static_cast<int64_t>(it->get<uint64_t>());
  return it->get<int64_t>();
}

std::string string_field(const nlohmann::json& event, const char* key) {
  auto it = event.find(key);
  if (it == event.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

template <class T>
T& slot(std::vector<std::pair<int64_t, T>>& table, int64_t pid) {
  for (auto& [key, value] : table) {
    if (key == pid) return value;
  }
  table.emplace_back(pid, T{});
  return table.back().second;
}

}  // namespace

Status TraceEventParser::parse(std::string_view json_text, std::string_view node_id, const std::string& source_name,
                               std::vector<TraceEvent>& out) {
  if (!json_depth_within(json_text)) {
    return make_error(ErrorKind::bad_input, "trace file {} is nested deeper than {} levels", source_name, kMaxJsonDepth);
  }
  const std::string node = normalize_node_id(node_id);
  // A file that turns out not to be valid JSON is skipped whole, as smdebug skips it: its events
  // wait here, and the state they changed is put back.
  const int64_t saved_start_us = start_us_;
  const auto saved_lanes = lanes_;
  const auto saved_stacks = stacks_;
  std::vector<TraceEvent> taken;
  auto restore = [&] {
    taken.clear();
    start_us_ = saved_start_us;
    lanes_ = saved_lanes;
    stacks_ = saved_stacks;
  };
  auto lane_name = [&](int64_t pid) -> std::string {
    for (const auto& [key, name] : lanes_) {
      if (key == pid) return name;
    }
    return "Unknown";
  };
  auto emit = [&](std::string name, int64_t lane_pid, int64_t start, int64_t end, TraceArgs args) {
    TraceEvent event;
    event.name = std::move(name);
    event.lane = lane_name(lane_pid);
    event.start_us = start;
    event.end_us = end;
    event.node_id = node;
    event.lane_pid = lane_pid;
    event.pid = args.integer("pid").value_or(lane_pid);
    event.args = std::move(args);
    event.source = source_;
    taken.push_back(std::move(event));
  };
  auto take = [&](const nlohmann::json& e) {
    std::string ph = string_field(e, "ph");
    if (ph.empty()) return;
    int64_t pid = integer_field(e, "pid").value_or(0);
    if (ph == "M") {
      auto args = e.find("args");
      bool has_args = args != e.end() && args->is_object();
      if (string_field(e, "name") == "process_name") {
        std::string name = "Unknown";
        if (has_args && args->contains("name") && (*args)["name"].is_string()) name = (*args)["name"].get<std::string>();
        slot(lanes_, pid) = name;
      }
      if (has_args) {
        auto start = args->find("start_time_since_epoch_in_micros");
        if (start != args->end() && start->is_number()) {
          start_us_ = start->is_number_float() ? static_cast<int64_t>(std::llround(start->get<double>()))
                                               : start->get<int64_t>();
        }
      }
    } else if (ph == "X") {
      auto ts = integer_field(e, "ts");
      auto dur = integer_field(e, "dur");
      if (!ts || !dur) {
        spdlog::debug("{}: skipping an \"X\" event without ts/dur", source_name);
        return;
      }
      int64_t start = *ts + start_us_;
      emit(string_field(e, "name"), pid, start, start + *dur, to_args(e));
    } else if (ph == "B") {
      auto ts = integer_field(e, "ts");
      if (!ts) return;
      slot(stacks_, pid).push_back(OpenEvent{string_field(e, "name"), *ts, to_args(e)});
    } else if (ph == "E") {
      auto ts = integer_field(e, "ts");
      auto& stack = slot(stacks_, pid);
      if (!ts || stack.empty()) {
        spdlog::debug("{}: no open \"B\" event on pid {}; skipping an \"E\" event", source_name, pid);
        return;
      }
      OpenEvent begin = std::move(stack.back());
      stack.pop_back();
      int64_t start = begin.ts + start_us_;
      int64_t end = *ts + start_us_;
      if (end < start) {
        spdlog::warn("{}: \"E\" event on pid {} ends before its \"B\" event {}; skipped", source_name, pid, begin.name);
        return;
      }
      // smdebug takes the args of the "E" event; fall back to the "B" event's when it has none.
      TraceArgs args = to_args(e);
      if (args.empty()) args = std::move(begin.args);
      emit(std::move(begin.name), pid, start, end, std::move(args));
    }
    // "i" (instant) and other phases carry no duration; smdebug ignores them too.
  };

  // Each event is taken as soon as the parser has it and then dropped, so a file never stands
  // whole as a document (one would take about ten times the file's size). The events are the
  // elements of the top-level array (depth 1) or of the "traceEvents" array of a top-level
  // object (depth 2); the object's other members are dropped unread.
  using Event = nlohmann::json::parse_event_t;
  enum class Root { unknown, array, object, other } root = Root::unknown;
  int events_depth = -1;      // the depth of the events, while inside their array
  bool events_key = false;    // the member being read is "traceEvents"
  bool events_array = false;  // the last "traceEvents" member is an array (the last one counts)
  int arrays_of_events = 0;
  auto callback = [&](int depth, Event event, nlohmann::json& parsed) -> bool {
    if (depth == 0) {
      if (root == Root::unknown) {
        root = event == Event::array_start ? Root::array : event == Event::object_start ? Root::object : Root::other;
        if (root == Root::array) events_depth = 1;
      }
      return true;
    }
    if (root == Root::object && depth == 1) {
      if (event == Event::key) {
        events_key = parsed.is_string() && parsed.get_ref<const std::string&>() == "traceEvents";
        return events_key;
      }
      if (events_key && (event == Event::object_start || event == Event::value)) events_array = false;
      if (event == Event::array_start && events_key) {
        events_array = true;
        // A second "traceEvents" member replaces the first, as in a parsed document.
        if (++arrays_of_events > 1) restore();
        events_depth = 2;
      }
      if (event == Event::array_end && events_depth == 2) events_depth = -1;
      return true;
    }
    if (depth != events_depth) return true;
    if (event == Event::object_end) take(parsed);
    // Every element has been taken (or is not an event): none is kept.
    return event == Event::object_start || event == Event::array_start || event == Event::key;
  };
  nlohmann::json doc = nlohmann::json::parse(json_text.begin(), json_text.end(), callback, false);
  if (doc.is_discarded()) {
    restore();
    return make_error(ErrorKind::bad_input, "trace file {} is not valid JSON", source_name);
  }
  if (root != Root::array && !(root == Root::object && events_array)) {
    restore();
    return make_error(ErrorKind::bad_input, "trace file {} is not a JSON array of trace events", source_name);
  }
  if (out.empty()) {
    out = std::move(taken);
  } else {
    out.insert(out.end(), std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end()));
  }
  return {};
}

namespace {

Result<std::string> slurp(const fs::path& path, const ProfileFiles& files) {
  return read_all(files, path);
}

}  // namespace

Result<std::vector<TraceEvent>> read_trace_file(const fs::path& path, const ProfileFiles& files) {
  SPROF_TRY(std::string text, slurp(path, files));
  std::string file_name = path.filename().string();
  TraceEventParser parser(trace_source_for(file_name).value_or(TraceSource::python_timeline));
  std::string node;
  if (auto name = parse_trace_file_name(path)) {
    node = name->node_id;
  } else {
    // Not in the pevents layout: the second '_' field of the name, if any.
    size_t first = file_name.find('_');
    size_t second = first == std::string::npos ? std::string::npos : file_name.find('_', first + 1);
    if (second != std::string::npos) node = file_name.substr(first + 1, second - first - 1);
  }
  std::vector<TraceEvent> events;
  SPROF_TRY_STATUS(parser.parse(text, node, path.string(), events));
  return events;
}

Result<TraceReadResult> read_trace_events(const fs::path& profile_dir, const ProfileFiles& files) {
  TraceReadResult result;
  fs::path root = profile_dir / kFrameworkDir;
  struct File {
    int64_t end_us;
    std::string path;
    TraceFileName name;
    TraceSource source;
  };
  std::vector<File> found;
  SPROF_TRY(auto paths, files_under(files, root));
  for (const fs::path& path : paths) {
    auto name = parse_trace_file_name(path);
    if (!name) continue;
    auto source = trace_source_for(path.filename().string());
    if (!source) {
      spdlog::debug("skipping trace file {} (no reader for its suffix)", path.string());
      continue;
    }
    found.push_back(File{name->end_us, path.string(), *name, *source});
  }
  std::sort(found.begin(), found.end(),
            [](const File& a, const File& b) { return std::tie(a.end_us, a.path) < std::tie(b.end_us, b.path); });
  TraceEventParser parsers[] = {TraceEventParser(TraceSource::python_timeline),
                                TraceEventParser(TraceSource::model_timeline), TraceEventParser(TraceSource::horovod),
                                TraceEventParser(TraceSource::smdataparallel)};
  std::vector<fs::path> wanted;
  for (const auto& file : found) wanted.emplace_back(file.path);
  files.prefetch(wanted);
  for (const auto& file : found) {
    auto text = slurp(file.path, files);
    if (!text.ok()) {
      result.warnings.push_back(text.error().message);
      continue;
    }
    auto status = parsers[static_cast<int>(file.source)].parse(*text, file.name.node_id, file.path, result.events);
    if (!status.ok()) result.warnings.push_back(status.error().message + "; skipped");
  }
  for (const auto& warning : result.warnings) spdlog::warn("{}", warning);
  return result;
}

std::vector<TraceEvent> filter_trace_events(const std::vector<TraceEvent>& events, int64_t start_us, int64_t end_us) {
  std::vector<TraceEvent> out;
  for (const auto& e : events) {
    if (e.end_us < start_us || end_us < e.start_us) continue;
    out.push_back(e);
  }
  return out;
}

}  // namespace sprof::store
