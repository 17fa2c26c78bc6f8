#include "sprof/stats_render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "sprof/json_output.hpp"
#include "sprof/markup.hpp"
#include "sprof/stats_dir.hpp"
#include "sprof/text_table.hpp"

namespace sprof::render {

std::string start_step_text(const store::StatsDirName& name) {
  return name.start.step ? std::to_string(*name.start.step) : "-1";
}

std::string end_step_text(const store::StatsDirName& name) {
  return name.end.step ? std::to_string(*name.end.step) : "inf";
}

Json records_json(const std::vector<const store::StatsRecord*>& records) {
  std::string text;
  // About 660 bytes a record: reserved so that the text is written once, not copied as it grows
  // (room not written to costs no memory).
  text.reserve(768 * records.size() + 64);
  JsonTextWriter w(text, kAnswerJsonIndent);
  w.begin_array();
  for (const store::StatsRecord* record : records) {
    const store::StatsRecord& r = *record;
    // smdebug's StepPythonProfileStats attributes, in its order. Steps: -1 for a start `*`,
    // null for an end `*` (smdebug's float('inf') has no JSON spelling).
    w.begin_object();
    w.key("profiler_name").string(r.profiler);
    w.key("framework").string(r.framework);
    w.key("node_id").string(r.node_id);
    w.key("start_mode").string(sprof::to_string(r.name.start.mode));
    w.key("start_step").integer(r.name.start.step ? *r.name.start.step : -1);
    w.key("start_phase").string(sprof::to_string(r.name.start.phase));
    w.key("start_time_since_epoch_in_micros").real(r.name.start.time_us);
    w.key("end_mode").string(sprof::to_string(r.name.end.mode));
    w.key("end_step");
    if (r.name.end.step) {
      w.integer(*r.name.end.step);
    } else {
      w.null();
    }
    w.key("end_phase").string(sprof::to_string(r.name.end.phase));
    w.key("end_time_since_epoch_in_micros").real(r.name.end.time_us);
    w.key("stats_path").string(r.path.string());
    w.key("stats_dir").string(r.dir_name);
    w.key("name_format").string(store::to_string(r.name.format));
    w.end_object();
  }
  w.end_array();
  return prewritten_json(std::move(text), kAnswerJsonIndent);
}

Json problems_json(const std::vector<store::Problem>& problems) {
  Json list = Json::array();
  for (const store::Problem& p : problems) {
    Json j;
    j["path"] = p.path.string();
    j["message"] = p.message;
    list.push_back(std::move(j));
  }
  return list;
}

std::vector<std::string> record_csv_header() {
  return {"profiler_name", "framework", "node_id", "start_mode", "start_step", "start_phase",
          "start_time_since_epoch_in_micros", "end_mode", "end_step", "end_phase",
          "end_time_since_epoch_in_micros", "stats_path", "stats_dir", "name_format"};
}

std::vector<std::string> record_csv_fields(const store::StatsRecord& r) {
  return {r.profiler,
          r.framework,
          r.node_id,
          std::string(sprof::to_string(r.name.start.mode)),
          start_step_text(r.name),
          std::string(sprof::to_string(r.name.start.phase)),
          store::python_float_repr(r.name.start.time_us),
          std::string(sprof::to_string(r.name.end.mode)),
          end_step_text(r.name),
          std::string(sprof::to_string(r.name.end.phase)),
          store::python_float_repr(r.name.end.time_us),
          r.path.string(),
          r.dir_name,
          std::string(store::to_string(r.name.format))};
}

namespace {

std::vector<TableCell> record_cells(const store::StatsRecord& r, std::string profiler, std::string path) {
  std::vector<TableCell> cells;
  for (std::string text :
       {std::move(profiler), r.framework, r.node_id, store::python_float_repr(r.name.start.time_us),
        store::python_float_repr(r.name.end.time_us), start_step_text(r.name), end_step_text(r.name),
        std::string(sprof::to_string(r.name.start.mode)), std::string(sprof::to_string(r.name.end.mode)),
        std::string(sprof::to_string(r.name.start.phase)), std::string(sprof::to_string(r.name.end.phase)),
        std::move(path)}) {
    cells.push_back(TableCell{std::move(text), ""});
  }
  return cells;
}

bool estimated_from_samples(const query::Aggregate& aggregate) {
  return std::any_of(aggregate.used.begin(), aggregate.used.end(),
                     [](const store::StatsRecord* r) { return r->sampled; });
}

}  // namespace

void append_aggregate_json(Json& into, const query::Aggregate& aggregate,
                           const FunctionOrder& order) {
  // Room for every member first: ordered_json keeps members in a vector whose growth copies
  // them (a pair with a const key may throw on a move), the prewritten records and functions
  // (megabytes) with them.
  if (into.is_null()) into = Json::object();
  auto& members = into.get_ref<Json::object_t&>();
  members.reserve(members.size() + 11);  // the 11 below
  into["stats"] = records_json(aggregate.used);
  into["skipped"] = problems_json(aggregate.unreadable);
  into["total_calls"] = aggregate.total_calls;
  into["primitive_calls"] = aggregate.primitive_calls;
  into["total_tt"] = aggregate.total_tt;
  into["sort"] = order.sort;
  into["function_count"] = listed_function_count(aggregate.table);
  into["estimated_from_samples"] = estimated_from_samples(aggregate);
  into["wall_seconds"] = aggregate.wall_seconds;
  Json threads = Json::array();
  for (const query::ThreadTime& t : aggregate.threads) {
    threads.push_back(Json{{"pid", t.pid}, {"tid", t.tid}, {"name", t.name}, {"seconds", t.seconds}});
  }
  into["threads"] = std::move(threads);
  auto rows = sorted_functions(aggregate.table, parse_sort_key(order.sort),
                               order.limit);
  into["functions"] = functions_json(rows);
}

std::string aggregate_time_note(const query::Aggregate& aggregate) {
  std::string note = fmt::format("Wall time {:.3f} s", aggregate.wall_seconds);
  auto label = [](const query::ThreadTime& t) {
    std::string name = t.name.empty() ? "thread" : terminal_safe(t.name);
    return t.tid != 0 ? fmt::format("{} {}", name, t.tid) : name;
  };
  if (aggregate.threads.size() == 1) {
    note += fmt::format("; the times below are one thread's: {}", label(aggregate.threads.front()));
  } else if (aggregate.threads.size() > 1) {
    note += fmt::format("; the times below add {} threads' samples ({:.3f} s):", aggregate.threads.size(),
                        aggregate.total_tt);
    constexpr size_t kShown = 4;
    for (size_t i = 0; i < aggregate.threads.size() && i < kShown; ++i) {
      note += fmt::format("{} {} {:.3f} s", i == 0 ? "" : ",", label(aggregate.threads[i]), aggregate.threads[i].seconds);
    }
    if (aggregate.threads.size() > kShown) note += fmt::format(" and {} more", aggregate.threads.size() - kShown);
    note += " (--thread NAME for one)";
  }
  return note + "\n";
}

std::string aggregate_table(const query::Aggregate& aggregate, const FunctionOrder& order) {
  SortKey key = parse_sort_key(order.sort);
  auto rows = sorted_functions(aggregate.table, key, order.limit);
  if (listed_function_count(aggregate.table) == 0) return "   No function: no sample fell in the selection.\n";
  StatsTotals totals{aggregate.total_calls, aggregate.primitive_calls, aggregate.total_tt,
                     estimated_from_samples(aggregate)};
  return render_function_table(rows, listed_function_count(aggregate.table), totals, key);
}

std::string aggregate_csv(const query::Aggregate& aggregate, const FunctionOrder& order,
                          const std::vector<std::string>& prefix_header,
                          const std::vector<std::string>& prefix_fields, bool header) {
  std::string out;
  if (header) {
    std::vector<std::string> h = prefix_header;
    for (auto& f : function_csv_header()) h.push_back(f);
    out += csv_line(h);
  }
  auto rows = sorted_functions(aggregate.table, parse_sort_key(order.sort),
                               order.limit);
  for (const FunctionEntry* entry : rows) {
    std::vector<std::string> fields = prefix_fields;
    for (auto& f : function_csv_fields(*entry)) fields.push_back(std::move(f));
    out += csv_line(fields);
  }
  return out;
}

std::string records_table(const std::vector<const store::StatsRecord*>& rows, const TextStyle& style) {
  TextTable table({"PROFILER", "FRAMEWORK", "NODE", "START_TIME_US", "END_TIME_US",
                   "START_STEP", "END_STEP", "START_MODE", "END_MODE", "START_PHASE",
                   "END_PHASE", "PATH"});
  for (const auto* r : rows) table.add_row(record_cells(*r, r->profiler, r->path.string()));
  return table.render(style.color, style.width);
}

std::string intervals_table(const std::vector<const store::StatsRecord*>& rows, const TextStyle& style) {
  // One row per stats directory: sprof record writes a pstats file and pyinstrument's pair into
  // each, which a per-file listing shows as three rows of one interval. The directory's files
  // keep their first file's place in smdebug's order.
  std::vector<std::filesystem::path> dirs;
  std::map<std::filesystem::path, std::pair<const store::StatsRecord*, std::set<std::string>>> by_dir;
  for (const auto* r : rows) {
    auto [it, added] = by_dir.try_emplace(r->path.parent_path(), r, std::set<std::string>{});
    if (added) dirs.push_back(r->path.parent_path());
    it->second.second.insert(r->profiler);
  }
  TextTable table({"PROFILERS", "FRAMEWORK", "NODE", "START_TIME_US", "END_TIME_US",
                   "START_STEP", "END_STEP", "START_MODE", "END_MODE", "START_PHASE",
                   "END_PHASE", "STATS_DIR"});
  for (const auto& dir : dirs) {
    const auto& [first, profilers] = by_dir.at(dir);
    table.add_row(record_cells(*first, fmt::format("{}", fmt::join(profilers, ",")), dir.string()));
  }
  return table.render(style.color, style.width);
}

Json nodes_json(const std::vector<query::NodeSummary>& nodes) {
  Json list = Json::array();
  for (const auto& s : nodes) {
    Json j;
    j["node_id"] = s.node_id;
    j["machine"] = s.machine;
    j["parent"] = s.parent.empty() ? Json(nullptr) : Json(s.parent);
    j["rank"] = s.rank.empty() ? Json(nullptr) : Json(s.rank);
    j["cprofile_stats"] = s.cprofile;
    j["pyinstrument_stats"] = s.pyinstrument;
    j["first_start_time_since_epoch_in_micros"] = s.first_start_us;
    j["last_end_time_since_epoch_in_micros"] = s.last_end_us;
    list.push_back(std::move(j));
  }
  return list;
}

std::string nodes_csv(const std::vector<query::NodeSummary>& nodes) {
  std::string text = csv_line({"node_id", "cprofile_stats", "pyinstrument_stats",
                               "first_start_time_since_epoch_in_micros", "last_end_time_since_epoch_in_micros"});
  for (const auto& s : nodes) {
    text += csv_line({s.node_id, std::to_string(s.cprofile), std::to_string(s.pyinstrument),
                      store::python_float_repr(s.first_start_us), store::python_float_repr(s.last_end_us)});
  }
  return text;
}

std::string nodes_table(const std::vector<query::NodeSummary>& nodes, const TextStyle& style) {
  // A RANK column when any process's rank is known (torchrun's RANK), a PARENT column when a
  // recorded process started another (DataLoader workers).
  bool ranks = std::any_of(nodes.begin(), nodes.end(), [](const auto& s) { return !s.rank.empty(); });
  bool parents = std::any_of(nodes.begin(), nodes.end(), [](const auto& s) { return !s.parent.empty(); });
  std::vector<std::string> header{"MACHINE", "NODE", "CPROFILE", "PYINSTRUMENT", "FIRST_START_US", "LAST_END_US"};
  if (parents) header.insert(header.begin() + 2, "PARENT");
  if (ranks) header.insert(header.begin() + 2, "RANK");
  TextTable table(header);
  // Each machine once, its processes under it.
  std::vector<const query::NodeSummary*> order;
  for (const auto& s : nodes) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](auto a, auto b) { return a->machine < b->machine; });
  const std::string* shown = nullptr;
  for (const query::NodeSummary* p : order) {
    const auto& s = *p;
    bool first = shown == nullptr || *shown != s.machine;
    shown = &s.machine;
    std::vector<TableCell> row{{first ? s.machine : "", ""},
                               {s.node_id, ""},
                                     {std::to_string(s.cprofile), ""},
                                     {std::to_string(s.pyinstrument), ""},
                                     {store::python_float_repr(s.first_start_us), ""},
                                     {store::python_float_repr(s.last_end_us), ""}};
    if (parents) row.insert(row.begin() + 2, {s.parent.empty() ? "-" : s.parent, ""});
    if (ranks) row.insert(row.begin() + 2, {s.rank.empty() ? "-" : s.rank, ""});
    table.add_row(row);
  }
  return table.render(style.color, style.width);
}

}  // namespace sprof::render
