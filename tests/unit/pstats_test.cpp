// The pstats reader, writer and add against the real thing: files written at test time by
// cProfile and profile under every installed CPython, checked against what that CPython's own
// pstats makes of them.

#include <optional>
#include <thread>
#include <tuple>

#include <catch2/catch.hpp>

#include "pstats_support.hpp"
#include "test_support.hpp"
#include "sprof/pstats.hpp"

using namespace pstats_test;
using sprof::ErrorKind;
using sprof::store::CallerStats;
using sprof::store::FunctionKey;
using sprof::store::identical;
using sprof::store::parse_pstats;
using sprof::store::read_pstats;
using sprof::store::serialize_pstats;
using sprof::store::write_pstats;

namespace {

StatsTable must_read(const fs::path& path) {
  auto table = read_pstats(path);
  INFO(path.string() << ": " << (table.ok() ? "" : table.error().message));
  REQUIRE(table.ok());
  return std::move(table).value();
}

const char* const kKinds[] = {"cprofile", "stats", "profile"};

}  // namespace

TEST_CASE("pstats: reads what cProfile and profile write under every installed CPython",
          "[pstats]") {
  const Workloads& w = workloads();
  REQUIRE_FALSE(w.made.empty());
  for (const Interpreter& interpreter : w.made) {
    std::vector<fs::path> files;
    for (int variant = 0; variant < 3; ++variant) {
      for (const char* kind : kKinds) files.push_back(w.file(interpreter.label, variant, kind));
    }
    auto expected = python_pstats(interpreter.path, "load_each", files);  // one process each
    REQUIRE(expected.size() == files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      INFO(interpreter.label << " " << files[i].filename().string());
      StatsTable table = must_read(files[i]);
      check_matches_python(table, expected[i]);
      if (files[i].extension() == ".profile") {
        // the profile module's callers are plain ints
        bool any_count = false;
        for (const auto& [key, stats] : table.entries()) {
          for (const auto& [caller, value] : stats.callers) any_count |= value.is_count;
        }
        CHECK(any_count);
      }
    }
  }
}

TEST_CASE("pstats: smdebug's real python_stats files load", "[pstats]") {
  // Real files from awslabs/sagemaker-debugger's tests (Python 3.7 cProfile, TensorFlow job).
  fs::path root = sprof::test::smdebug_fixtures() / "cprofile_python_stats";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(root, ec)) {
    if (fs::exists(dir.path() / "python_stats")) files.push_back(dir.path() / "python_stats");
  }
  INFO("fixtures: " << root);
  REQUIRE(files.size() == 2);
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    INFO(file.string());
    StatsTable table = must_read(file);
    CHECK(table.size() > 100);
    check_matches_python(table, python_pstats(system_python(), "load", {file}));
  }
  StatsTable sum = must_read(files[0]);
  for (size_t i = files.size(); i-- > 1;) sum.add(must_read(files[i]));
  check_matches_python(sum, python_pstats(system_python(), "add", files));
}

TEST_CASE("pstats: files sprof writes load in every installed CPython's pstats", "[pstats]") {
  const Workloads& w = workloads();
  REQUIRE_FALSE(w.made.empty());
  TempDir out;
  std::vector<fs::path> written;
  std::vector<StatsTable> tables;
  for (const Interpreter& source : w.made) {
    for (const char* kind : {"cprofile", "profile"}) {
      tables.push_back(must_read(w.file(source.label, 2, kind)));
      written.push_back(out.path() / fmt::format("{}-{}.pstats", source.label, kind));
      REQUIRE(write_pstats(written.back(), tables.back()).ok());
      // sprof reads back exactly what it wrote
      CHECK(identical(tables.back(), must_read(written.back())));
    }
  }
  // Every interpreter loads every file written from every interpreter's profile.
  for (const Interpreter& reader : w.made) {
    auto expected = python_pstats(reader.path, "load_each", written);
    REQUIRE(expected.size() == written.size());
    for (size_t i = 0; i < written.size(); ++i) {
      INFO(written[i].filename().string() << " read by " << reader.label);
      check_matches_python(tables[i], expected[i]);
    }
  }
  // `python -m pstats FILE` is the interactive browser: it must load the file and print it.
  for (const Interpreter& reader : w.made) {
    INFO(reader.label);
    auto result = run(fmt::format("printf 'sort cumulative\\nstats 5\\nquit\\n' | {} -m pstats {}",
                                  quote(reader.path), quote(written.front().string())));
    CHECK(result.status == 0);
    CHECK(result.out.find("function calls") != std::string::npos);
    CHECK(result.out.find("Ordered by: cumulative time") != std::string::npos);
  }
}

TEST_CASE("pstats: values at the edges of marshal's encodings survive a round trip", "[pstats]") {
  StatsTable table;
  const std::string long_ascii(300, 'x');  // 'a' rather than 'z' (over 255 bytes)
  FunctionKey step{"/src/train.py", 10, "step"};
  FunctionKey unicode{"/src/dätei.py", 2147483647, "größe"};
  FunctionKey lone_surrogate{"/src/\xed\xa0\x80.py", -2147483648LL, "\xed\xbf\xbf"};
  FunctionKey huge_line{long_ascii, int64_t{1} << 40, ""};
  FunctionKey builtin{"~", 0, "<built-in method builtins.len>"};
  auto& s = table[step];
  // 64-bit extremes need marshal's 'l' encoding (the totals must still fit in 64 bits)
  s = {INT64_MAX - (int64_t{1} << 32), INT64_MIN + (int64_t{1} << 32), -0.0,
       std::numeric_limits<double>::infinity(), {}};
  s.callers.push_back({unicode, CallerStats{false, 2147483648LL, -2147483649LL, 5e-324, 1e308}});
  s.callers.push_back({huge_line, CallerStats{true, 7, 0, 0.0, 0.0}});
  s.callers.push_back({builtin, CallerStats{false, INT64_MAX, INT64_MIN, -0.0, 0.0}});
  table[unicode] = {2147483647, -2147483648LL, std::nan(""), -std::numeric_limits<double>::infinity(),
                    {{step, CallerStats{false, 1, 1, 0.1, 0.2}}}};
  table[lone_surrogate] = {1, 1, 0.1 + 0.2, 1.0 / 3.0, {{lone_surrogate, CallerStats{}}}};
  table[huge_line] = {0, 0, 0.0, 0.0, {}};
  table[builtin] = {3, 3, 1e-9, 2e-9, {{step, CallerStats{true, 3, 0, 0.0, 0.0}}}};

  auto bytes = serialize_pstats(table);
  REQUIRE(bytes.ok());
  auto back = parse_pstats(*bytes, "round-trip");
  REQUIRE(back.ok());
  CHECK(identical(table, *back));

  TempDir out;
  fs::path file = out.path() / "edges.pstats";
  write_bytes(file, *bytes);
  const auto& all = interpreters();
  REQUIRE_FALSE(all.empty());
  for (const Interpreter& reader : all) {
    INFO(reader.label);
    check_matches_python(table, python_pstats(reader.path, "load", {file}));
  }
}

TEST_CASE("pstats: add equals pstats.Stats.add", "[pstats]") {
  const Workloads& w = workloads();
  REQUIRE(w.made.size() >= 1);
  const std::string python = system_python();
  // cProfile files from different interpreters and variants share some functions.
  std::vector<fs::path> files;
  for (size_t i = 0; i < w.made.size(); ++i) {
    files.push_back(w.file(w.made[i].label, static_cast<int>(i % 3), i % 2 ? "stats" : "cprofile"));
  }
  files.push_back(w.file(w.made[0].label, 2, "cprofile"));
  files.push_back(files[0]);  // the same file again: every function already there

  SECTION("Stats(a).add(b, c, ...) adds the rest in reverse order") {
    StatsTable table = must_read(files[0]);
    for (size_t i = files.size(); i-- > 1;) table.add(must_read(files[i]));
    check_matches_python(table, python_pstats(python, "add", files));
  }
  SECTION("one add per file, by table and straight from the files") {
    StatsTable by_table = must_read(files[0]);
    StatsTable by_file = must_read(files[0]);
    for (size_t i = 1; i < files.size(); ++i) {
      by_table.add(must_read(files[i]));
      REQUIRE(by_file.add_file(files[i]).ok());
    }
    auto expected = python_pstats(python, "add_each", files);
    check_matches_python(by_table, expected);
    check_matches_python(by_file, expected);
    CHECK(identical(by_table, by_file));
  }
  SECTION("files parsed on several threads, then added in order") {
    std::vector<std::optional<sprof::Result<sprof::store::ParsedPstats>>> parsed(files.size());
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = t; i < files.size(); i += 3) {
          parsed[i] = sprof::store::read_pstats_parsed(files[i]);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    StatsTable table = must_read(files[0]);
    for (size_t i = 1; i < files.size(); ++i) {
      REQUIRE(parsed[i].has_value());
      REQUIRE(parsed[i]->ok());
      CHECK((*parsed[i])->size() == must_read(files[i]).size());
      table.add(parsed[i]->value());
    }
    check_matches_python(table, python_pstats(python, "add_each", files));
  }
  SECTION("files numbered in one key pool on several threads, added to a PooledStatsTable") {
    sprof::store::FunctionKeyPool pool;
    std::vector<sprof::store::ParsedPstats> parsed(files.size());
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        sprof::store::FunctionKeyCache keys(pool);  // one per thread, as query::aggregate has
        for (size_t i = t; i < files.size(); i += 3) {
          if (!sprof::store::read_pstats_into(files[i], parsed[i]).ok()) return;
          keys.number_keys(parsed[i]);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    sprof::store::PooledStatsTable pooled(pool);
    StatsTable by_strings;
    for (size_t i = 0; i < files.size(); ++i) {
      REQUIRE(parsed[i].size() > 0);
      pooled.add(parsed[i]);
      by_strings.add(parsed[i]);
    }
    StatsTable table = pooled.table();
    CHECK(identical(table, by_strings));
    check_matches_python(table, python_pstats(python, "empty_add", files));
    // Numbered once per distinct key, whichever thread met it first.
    CHECK(pool.size() >= table.size());
    SECTION("and the table goes on adding by strings") {
      table.add(must_read(files[0]));
      by_strings.add(must_read(files[0]));
      CHECK(identical(table, by_strings));
    }
    SECTION("a file numbered by another pool's cache is refused") {
      sprof::store::FunctionKeyPool other;
      sprof::store::PooledStatsTable elsewhere(other);
      CHECK_THROWS_AS(elsewhere.add(parsed[0]), std::logic_error);
      sprof::store::ParsedPstats unnumbered;
      REQUIRE(sprof::store::read_pstats_into(files[0], unnumbered).ok());
      CHECK_THROWS_AS(pooled.add(unnumbered), std::logic_error);
    }
  }
  SECTION("starting from an empty Stats()") {
    StatsTable table;
    for (const auto& f : files) REQUIRE(table.add_file(f).ok());
    check_matches_python(table, python_pstats(python, "empty_add", files));
  }
  SECTION("the profile module's int callers add up") {
    std::vector<fs::path> profiles;
    for (int variant = 0; variant < 3; ++variant) {
      profiles.push_back(w.file(w.made.back().label, variant, "profile"));
    }
    StatsTable table;
    for (const auto& f : profiles) REQUIRE(table.add_file(f).ok());
    check_matches_python(table, python_pstats(python, "empty_add", profiles));
  }
  SECTION("adding a table to itself doubles it") {
    StatsTable table = must_read(files[0]);
    table.add(table);
    check_matches_python(table, python_pstats(python, "add_each", {files[0], files[0]}));
  }
  SECTION("the aggregate written out loads in pstats with the same numbers") {
    StatsTable table;
    for (const auto& f : files) REQUIRE(table.add_file(f).ok());
    TempDir out;
    fs::path written = out.path() / "sum.pstats";
    REQUIRE(write_pstats(written, table).ok());
    auto expected = python_pstats(python, "empty_add", files);
    auto reloaded = python_pstats(python, "load", {written});
    CHECK(reloaded.at("entries") == expected.at("entries"));
  }
}

TEST_CASE("pstats: a PooledStatsTable adds as StatsTable does, long callers lists and reused buffers too",
          "[pstats]") {
  // Files written by sprof's own writer, shaped to reach what real profiles rarely do: a
  // function with more callers than are scanned (a hash index), int callers (as the profile
  // module writes) beside tuples, a -0.0 time, and two files whose strings lie at the same
  // places in a reused buffer but differ ("fa" and "fb"): the cache must not take them for the
  // same keys.
  auto make = [](const std::string& tag, int callers, bool counts) {
    StatsTable table;
    auto& hub = table[FunctionKey{"hub_" + tag + ".py", 7, "hub"}];
    hub.nc = hub.cc = callers;
    hub.tt = -0.0;
    hub.ct = 0.25;
    for (int c = 0; c < callers; ++c) {
      FunctionKey caller{"caller.py", c, "f" + std::to_string(c % 3 == 0 ? c : callers - c)};
      auto& stats = table[caller];
      stats.nc = stats.cc = 1;
      stats.tt = stats.ct = 0.001 * c;
      CallerStats value = counts && c % 2 ? CallerStats{true, c + 1, 0, 0.0, 0.0}
                                          : CallerStats{false, c + 1, c + 1, 0.5 / (c + 1), 0.75 / (c + 1)};
      table[FunctionKey{"hub_" + tag + ".py", 7, "hub"}].callers.emplace_back(caller, value);
    }
    return table;
  };
  TempDir dir;
  std::vector<fs::path> files;
  int n = 0;
  for (const auto& [tag, callers, counts] :
       std::vector<std::tuple<std::string, int, bool>>{{"fa", 20, false}, {"fb", 20, false}, {"fa", 12, false},
                                                       {"fc", 3, true}, {"fc", 30, true}}) {
    files.push_back(dir.path() / ("f" + std::to_string(n++) + ".pstats"));
    REQUIRE(write_pstats(files.back(), make(tag, callers, counts)).ok());
  }
  sprof::store::FunctionKeyPool pool;
  sprof::store::FunctionKeyCache keys(pool);
  sprof::store::PooledStatsTable pooled(pool);
  StatsTable by_strings;
  sprof::store::ParsedPstats slot;  // one buffer for every file, as query::aggregate's ring reuses
  for (const fs::path& file : files) {
    REQUIRE(sprof::store::read_pstats_into(file, slot).ok());
    keys.number_keys(slot);
    pooled.add(slot);
    by_strings.add(slot);
  }
  StatsTable table = pooled.table();
  CHECK(identical(table, by_strings));
  CHECK(table.find(FunctionKey{"hub_fa.py", 7, "hub"}) != nullptr);
  CHECK(table.find(FunctionKey{"hub_fb.py", 7, "hub"}) != nullptr);
  CHECK(table.find(FunctionKey{"hub_fa.py", 7, "hub"})->callers.size() > 8);
  check_matches_python(table, python_pstats(system_python(), "empty_add", files));
}

TEST_CASE("pstats: operator[] and find keep a Python dict's order", "[pstats]") {
  StatsTable table;
  FunctionKey a{"a.py", 1, "a"}, b{"b.py", 2, "b"};
  table[b].nc = 1;
  table[a].nc = 2;
  table[b].nc += 3;
  REQUIRE(table.size() == 2);
  CHECK(table.entries()[0].first == b);
  CHECK(table.entries()[1].first == a);
  REQUIRE(table.find(b) != nullptr);
  CHECK(table.find(b)->nc == 4);
  CHECK(table.find(FunctionKey{"b.py", 3, "b"}) == nullptr);
  CHECK(table.total_calls() == 6);
  CHECK(sprof::store::FunctionKeyHash{}(a) ==
        sprof::store::hash_function_key(a.file, a.line, a.name));
}

TEST_CASE("pstats: an empty table is not written", "[pstats]") {
  StatsTable empty;
  auto bytes = serialize_pstats(empty);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().kind == ErrorKind::bad_input);
  TempDir out;
  auto status = write_pstats(out.path() / "x.pstats", empty);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().message.find("x.pstats") != std::string::npos);
  CHECK_FALSE(fs::exists(out.path() / "x.pstats"));
}

TEST_CASE("pstats: a name that is not UTF-8 is not written", "[pstats]") {
  StatsTable table;
  table[FunctionKey{"/src/\xff.py", 1, "f"}].nc = 1;
  auto bytes = serialize_pstats(table);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().message.find("not valid UTF-8") != std::string::npos);
}
