#include "sprof/pstats_table.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sprof/json_output.hpp"
#include "sprof/markup.hpp"
#include "sprof/stats_dir.hpp"

namespace sprof::render {
namespace {

std::string f8(double x) { return fmt::format("{:8.3f}", x); }

// The members every function and caller has, in their order.
void write_key_members(JsonTextWriter& w, const store::FunctionKey& key) {
  w.key("file").string(key.file);
  w.key("line").integer(key.line);
  w.key("function").string(key.name);
  w.key("label").string(func_std_string(key));
}

// A per-call time, or null without calls.
void write_percall(JsonTextWriter& w, double time, int64_t calls) {
  if (calls != 0) {
    w.real(time / static_cast<double>(calls));
  } else {
    w.null();
  }
}

}  // namespace

SortKey parse_sort_key(const std::string& text) {
  if (text == "tottime") return SortKey::tottime;
  if (text == "ncalls") return SortKey::ncalls;
  if (text == "pcalls") return SortKey::pcalls;
  return SortKey::cumtime;
}

std::string sort_description(SortKey key) {
  switch (key) {
    case SortKey::tottime: return "internal time";
    case SortKey::cumtime: return "cumulative time";
    case SortKey::ncalls: return "call count";
    case SortKey::pcalls: return "primitive call count";
  }
  return "cumulative time";
}

std::vector<const FunctionEntry*> sorted_functions(const store::StatsTable& table, SortKey key,
                                                   size_t limit) {
  std::vector<const FunctionEntry*> rows;
  rows.reserve(table.size());
  for (const FunctionEntry& entry : table.entries()) {
    if (entry.first != store::no_samples_function()) rows.push_back(&entry);
  }
  auto greater = [key](const FunctionEntry* a, const FunctionEntry* b) {
    const store::FunctionStats& x = a->second;
    const store::FunctionStats& y = b->second;
    switch (key) {
      case SortKey::tottime: return x.tt > y.tt;
      case SortKey::cumtime: return x.ct > y.ct;
      case SortKey::ncalls: return x.nc > y.nc;
      case SortKey::pcalls: return x.cc > y.cc;
    }
    return false;
  };
  std::stable_sort(rows.begin(), rows.end(), greater);
  if (limit > 0 && rows.size() > limit) rows.resize(limit);
  return rows;
}

size_t listed_function_count(const store::StatsTable& table) {
  return table.size() - (table.find(store::no_samples_function()) != nullptr ? 1 : 0);
}

std::string func_std_string(const store::FunctionKey& key) {
  if (key.file == "~" && key.line == 0) {
    const std::string& name = key.name;
    if (name.size() >= 2 && name.front() == '<' && name.back() == '>') {
      return "{" + name.substr(1, name.size() - 2) + "}";
    }
    return name;
  }
  return fmt::format("{}:{}({})", key.file, key.line, key.name);
}

std::string render_function_table(const std::vector<const FunctionEntry*>& rows,
                                  size_t function_count, const StatsTotals& totals, SortKey key) {
  std::string out;
  // pstats prints an 8-blank indent, then a separating blank.
  out += fmt::format("         {} function calls", totals.total_calls);
  if (totals.total_calls != totals.primitive_calls) {
    out += fmt::format(" ({} primitive calls)", totals.primitive_calls);
  }
  // pstats' wording would pass sprof's counts off as counted calls.
  if (totals.estimated) out += " (estimated from samples)";
  out += fmt::format(" in {:.3f} seconds\n\n", totals.total_tt);
  out += fmt::format("   Ordered by: {}\n", sort_description(key));
  if (rows.size() < function_count) {
    out += fmt::format("   List reduced from {} to {} due to restriction <{}>\n", function_count,
                       rows.size(), rows.size());
  }
  out += "\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n";
  for (const FunctionEntry* entry : rows) {
    const store::FunctionStats& s = entry->second;
    std::string calls = std::to_string(s.nc);
    if (s.nc != s.cc) calls += "/" + std::to_string(s.cc);
    out += fmt::format("{:>9} {} {} {} {} {}\n", calls, f8(s.tt),
                       s.nc == 0 ? std::string(8, ' ') : f8(s.tt / static_cast<double>(s.nc)),
                       f8(s.ct),
                       s.cc == 0 ? std::string(8, ' ') : f8(s.ct / static_cast<double>(s.cc)),
                       terminal_safe(func_std_string(entry->first)));
  }
  return out;
}

Json functions_json(const std::vector<const FunctionEntry*>& rows) {
  // Written as text: the largest part of the stats answers, too slow to build as a document first.
  // Reserved as records_json's text is (about 850 bytes a function with its callers).
  std::string text;
  text.reserve(1024 * rows.size() + 64);
  JsonTextWriter w(text, kAnswerJsonIndent);
  w.begin_array();
  for (const FunctionEntry* entry : rows) {
    const store::FunctionStats& s = entry->second;
    w.begin_object();
    write_key_members(w, entry->first);
    w.key("ncalls").integer(s.nc);
    w.key("pcalls").integer(s.cc);
    w.key("tottime").real(s.tt);
    w.key("cumtime").real(s.ct);
    write_percall(w.key("tottime_percall"), s.tt, s.nc);
    write_percall(w.key("cumtime_percall"), s.ct, s.cc);
    w.key("callers").begin_array();
    for (const auto& [caller, c] : s.callers) {
      w.begin_object();
      write_key_members(w, caller);
      w.key("ncalls").integer(c.nc);
      // The `profile` module records a bare call count per caller; cProfile a 4-tuple.
      if (c.is_count) {
        w.key("pcalls").null().key("tottime").null().key("cumtime").null();
      } else {
        w.key("pcalls").integer(c.cc).key("tottime").real(c.tt).key("cumtime").real(c.ct);
      }
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  return prewritten_json(std::move(text), kAnswerJsonIndent);
}

std::vector<std::string> function_csv_header() {
  return {"ncalls", "pcalls", "tottime", "tottime_percall", "cumtime", "cumtime_percall",
          "file",   "line",   "function"};
}

std::vector<std::string> function_csv_fields(const FunctionEntry& entry) {
  const store::FunctionStats& s = entry.second;
  return {std::to_string(s.nc),
          std::to_string(s.cc),
          store::python_float_repr(s.tt),
          s.nc ? store::python_float_repr(s.tt / static_cast<double>(s.nc)) : std::string(),
          store::python_float_repr(s.ct),
          s.cc ? store::python_float_repr(s.ct / static_cast<double>(s.cc)) : std::string(),
          entry.first.file,
          std::to_string(entry.first.line),
          entry.first.name};
}

}  // namespace sprof::render
