// The profile as tables for SQL engines (sprof/profile_tables.hpp; schema: docs/tables.md). Every
// figure comes from the readers analyze uses, so a query over the tables gives analyze's numbers.

#include "sprof/profile_tables.hpp"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sprof/analyze.hpp"
#include "sprof/file_bytes.hpp"
#include "sprof/gpu_report.hpp"
#include "sprof/gzip.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/system_metrics.hpp"
#include "report/step_spans.hpp"

namespace fs = std::filesystem;

namespace sprof::report {
namespace {

using nlohmann::ordered_json;

// A partition value Hive, Athena and Trino take without escaping.
std::string partition_value(std::string_view text) {
  std::string out;
  for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return out.empty() ? "_" : out;
}

// One table of one job: rows gathered per node, written in parts of at most rows_per_part.
class TableWriter {
 public:
  TableWriter(const fs::path& out, std::string table, std::string job, uint64_t rows_per_part, TablesWritten& written)
      : out_(out), table_(std::move(table)), job_(std::move(job)), rows_per_part_(rows_per_part), written_(written) {}

  // node: "" for the tables partitioned by job only.
  Status add(const std::string& node, const ordered_json& row) {
    Part& p = parts_[node];
    p.text += row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    p.text += '\n';
    if (++p.rows >= rows_per_part_) return flush(node, p);
    return {};
  }
  Status finish() {
    for (auto& [node, p] : parts_) {
      if (p.rows > 0) SPROF_TRY_STATUS(flush(node, p));
    }
    return {};
  }

 private:
  struct Part {
    std::string text;
    uint64_t rows = 0;
    int number = 0;
  };
  Status flush(const std::string& node, Part& p) {
    std::string rel = fmt::format("table={}/job={}/", table_, job_);
    if (!node.empty()) rel += fmt::format("node={}/", partition_value(node));
    rel += fmt::format("part-{}.json.gz", p.number++);
    fs::path path = out_ / rel;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return make_error(ErrorKind::io, "{}: cannot write: {}", path.parent_path().string(), ec.message());
    SPROF_TRY_STATUS(store::write_file_atomically(path, store::gzip(p.text)));
    written_.files.push_back({rel, p.rows});
    p.text.clear();
    p.rows = 0;
    return {};
  }

  fs::path out_;
  std::string table_, job_;
  uint64_t rows_per_part_;
  TablesWritten& written_;
  std::map<std::string, Part> parts_;
};

ordered_json optional_number(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

ordered_json step_number(const StepRecord& s) {
  const std::optional<int64_t> n = s.number();
  return n ? ordered_json(*n) : ordered_json(nullptr);
}

std::string default_job(const fs::path& dir, const AnalyzeReport& report) {
  fs::path name = dir.lexically_normal();
  std::string base = (name.has_filename() ? name.filename() : name.parent_path().filename()).string();
  std::time_t t = static_cast<std::time_t>(report.job.start_us / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  return base + "-" + stamp;
}

// Each process's steps as spans (step_spans.hpp), unit = index into `steps`.
struct ProcessSteps {
  std::vector<const StepRecord*> steps;
  std::map<int64_t, std::vector<StepSpan>> spans;  // by pid: steps and the gaps between them
  const StepRecord* at(int64_t pid, int64_t t_ns) const {
    auto w = spans.find(pid);
    const StepSpan* span = w == spans.end() ? nullptr : span_at(w->second, t_ns);
    return span == nullptr || span->unit < 0 ? nullptr : steps[size_t(span->unit)];
  }
};

void put_step(ordered_json& row, const StepRecord* s) {
  row["mode"] = s ? ordered_json(s->mode) : ordered_json(nullptr);
  row["step"] = s ? step_number(*s) : ordered_json(nullptr);
}

// Each sample's time split across the process's steps and the gaps between them: a step's rows
// never add up to more than the step lasted per thread, and all rows together to every sample's
// whole weight, as analyze counts the run's functions.
Status write_function_samples(const store::ProcessSamples& p, const ProcessSteps& steps, const std::vector<bool>& mask,
                              TableWriter& table) {
  const store::SampleLog& log = p.log;
  static const std::vector<StepSpan> kNoSteps = with_gaps({});
  auto spans = steps.spans.find(log.pid());
  const std::vector<StepSpan>& timeline = spans != steps.spans.end() ? spans->second : kNoSteps;
  struct Sums {
    double self_s = 0, total_s = 0, waiting_s = 0;
    uint64_t self_samples = 0;
  };
  // (thread, step unit or -1, function) -> sums.
  std::map<std::tuple<uint32_t, int64_t, uint32_t>, Sums> sums;
  std::vector<uint64_t> seen(log.functions().size(), 0);
  std::vector<uint32_t> frames;
  uint64_t index = 0;
  log.for_each_sample([&](const store::SampleRecord& r) {
    if (r.stack == 0) return;
    log.stack_frames(r.stack, frames);
    const StepSpan* home = span_at(timeline, r.time_ns);
    split_sample(timeline, r.time_ns, r.weight_ns, [&](const StepSpan& span, int64_t overlap_ns) {
      const double seconds = double(overlap_ns) / 1e9;
      ++index;
      for (size_t i = 0; i < frames.size(); ++i) {
        uint32_t fn = log.frames()[frames[i]].function;
        Sums& s = sums[{r.thread, span.unit, fn}];
        if (i == 0) {
          s.self_s += seconds;
          if (&span == home) s.self_samples += 1;
          if (r.idle()) s.waiting_s += seconds;
        }
        if (seen[fn] != index) {
          seen[fn] = index;
          s.total_s += seconds;
        }
      }
    });
  });
  for (const auto& [key, s] : sums) {
    const auto& [thread, unit, fn] = key;
    const store::LogThread& th = log.threads()[thread];
    const store::LogFunction& f = log.functions()[fn];
    ordered_json row{{"pid", log.pid()}, {"tid", th.native_tid}, {"thread", th.name},
                     {"step_thread", mask.empty() || (thread < mask.size() && mask[thread])}};
    put_step(row, unit < 0 ? nullptr : steps.steps[size_t(unit)]);
    row["function"] = f.name;
    row["file"] = f.file;
    row["line"] = f.first_line;
    row["self_s"] = s.self_s;
    row["total_s"] = s.total_s;
    row["waiting_s"] = s.waiting_s;
    row["self_samples"] = s.self_samples;
    SPROF_TRY_STATUS(table.add(p.node_id, row));
  }
  return {};
}

Status write_kernels(const query::Profile& profile, const ProcessSteps& steps, const std::map<int64_t, std::string>& node_of,
                     TableWriter& table) {
  Result<GpuInput> gpu = load_gpu_input(profile);
  if (!gpu.ok()) return {};  // no GPU activity: no rows
  struct Sums {
    int64_t launches = 0;
    int64_t total_ns = 0;
  };
  std::map<std::tuple<int32_t, int32_t, int64_t, const StepRecord*, std::string_view>, Sums> sums;
  for (const store::GpuOp& op : gpu->trace.ops) {
    if (op.kind != store::GpuOpKind::kernel) continue;
    Sums& s = sums[{op.pid, op.device, op.stream, steps.at(op.pid, op.start_ns), op.name}];
    s.launches += 1;
    s.total_ns += op.duration_ns();
  }
  for (const auto& [key, s] : sums) {
    const auto& [pid, device, stream, step, name] = key;
    ordered_json row{{"pid", pid}, {"device", device}, {"stream", stream}};
    put_step(row, step);
    row["kernel"] = std::string(name);
    row["launches"] = s.launches;
    row["total_s"] = double(s.total_ns) / 1e9;
    auto node = node_of.find(pid);
    SPROF_TRY_STATUS(table.add(node != node_of.end() ? node->second : fmt::format("{}-unknown", pid), row));
  }
  return {};
}

}  // namespace

Result<TablesWritten> write_profile_tables(const store::ProfilePath& profile_dir, const fs::path& out_dir, const TablesOptions& options) {
  SPROF_TRY(query::Profile profile, query::Profile::open(profile_dir));
  SPROF_TRY(AnalyzeReport report, analyze(profile, AnalyzeOptions::figures_only()));
  const store::ProfileSamples* loaded = nullptr;
  if (profile.contents().sprof()) {
    SPROF_TRY(loaded, profile.samples());
  }
  TablesWritten written;
  written.job = partition_value(options.job.empty() ? default_job(profile_dir.path, report) : options.job);
  static const char* const kTables[] = {"jobs", "steps", "function_samples", "kernels", "system_metrics", "rules"};
  for (const char* table : kTables) {
    std::error_code ec;
    fs::path existing = out_dir / fmt::format("table={}", table) / fmt::format("job={}", written.job);
    if (fs::exists(existing, ec)) {
      return make_error(ErrorKind::usage, "{}: job {} is there already (a job's tables are never rewritten; --job NAME "
                        "names this one otherwise)", existing.string(), written.job);
    }
  }
  auto writer = [&](const char* table) { return TableWriter(out_dir, table, written.job, options.rows_per_part, written); };

  // smdebug's own directories have no samples.
  const store::ProfileSamples* samples = loaded && !loaded->processes.empty() ? loaded : nullptr;
  const store::Manifest* manifest = samples && samples->manifest ? &*samples->manifest : nullptr;

  std::set<std::string> hosts;
  for (const JobMachine& m : report.job.machines) hosts.insert(m.host);
  TableWriter jobs = writer("jobs");
  SPROF_TRY_STATUS(jobs.add("", ordered_json{{"profile", profile_dir.path.string()},
                                             {"command", report.job.command},
                                             {"mode", report.job.mode},
                                             {"state", report.job.state},
                                             {"start_us", report.job.start_us},
                                             {"end_us", report.job.end_us},
                                             {"duration_s", report.job.duration_s()},
                                             {"hosts", hosts},
                                             {"processes", report.job.processes.size()},
                                             {"python_versions", report.job.python_versions},
                                             {"exit_status", report.job.exit_status ? ordered_json(*report.job.exit_status) : ordered_json(nullptr)},
                                             {"sprof_version", manifest ? manifest->sprof_version : ""}}));
  SPROF_TRY_STATUS(jobs.finish());

  // Steps, partial ones (an attach window cut them) marked.
  const std::map<std::string, std::string>& ranks = profile.process_ranks();
  TableWriter steps = writer("steps");
  ProcessSteps process_steps;
  std::map<int64_t, std::string> node_of;
  for (bool partial : {false, true}) {
    for (const StepRecord& s : partial ? report.partial_steps : report.steps) {
      auto rank = ranks.find(s.node);
      SPROF_TRY_STATUS(steps.add(s.node, ordered_json{{"pid", s.pid},
                                                      {"rank", rank != ranks.end() ? ordered_json(rank->second) : ordered_json(nullptr)},
                                                      {"mode", s.mode},
                                                      {"step", step_number(s)},
                                                      {"start_us", s.start_us},
                                                      {"end_us", s.end_us},
                                                      {"duration_s", s.seconds()},
                                                      {"input_wait_s", optional_number(s.wait_s)},
                                                      {"dataloader_s", s.dataloader_s},
                                                      {"outlier", s.outlier},
                                                      {"partial", partial}}));
      if (manifest != nullptr) {  // samples and kernels are placed in steps only in sprof's profiles
        process_steps.spans[s.pid].push_back({manifest->to_monotonic_ns(s.start_us), manifest->to_monotonic_ns(s.end_us),
                                              int64_t(process_steps.steps.size())});
      }
      process_steps.steps.push_back(&s);
      node_of.emplace(s.pid, s.node);
    }
  }
  SPROF_TRY_STATUS(steps.finish());
  for (auto& [pid, spans] : process_steps.spans) {
    std::sort(spans.begin(), spans.end(), [](const StepSpan& a, const StepSpan& b) { return a.begin_ns < b.begin_ns; });
    spans = with_gaps(spans);
  }

  if (samples != nullptr && manifest != nullptr) {
    for (const store::ProcessSamples& p : samples->processes) node_of.emplace(p.log.pid(), p.node_id);
    TableWriter functions = writer("function_samples");
    const SampleFilter step_view = time_view_filter(TimeView{}, *samples);
    for (const store::ProcessSamples& p : samples->processes) {
      SPROF_TRY_STATUS(write_function_samples(p, process_steps, step_view.thread_mask(p.log), functions));
    }
    SPROF_TRY_STATUS(functions.finish());
  }
  if (manifest != nullptr) {
    TableWriter kernels = writer("kernels");
    SPROF_TRY_STATUS(write_kernels(profile, process_steps, node_of, kernels));
    SPROF_TRY_STATUS(kernels.finish());
  }

  Result<const std::vector<store::SystemMetric>*> metrics = profile.system_metrics();
  if (metrics.ok()) {
    TableWriter system = writer("system_metrics");
    for (const store::SystemMetric& m : **metrics) {
      SPROF_TRY_STATUS(system.add(m.node_id, ordered_json{{"timestamp_s", m.timestamp},
                                                          {"type", m.type},
                                                          {"name", m.name},
                                                          {"dimension", m.dimension},
                                                          {"value", m.value}}));
    }
    SPROF_TRY_STATUS(system.finish());
  }

  TableWriter rules = writer("rules");
  for (const rules::RuleResult& r : report.rules) {
    SPROF_TRY_STATUS(rules.add("", ordered_json{{"rule", r.rule},
                                                {"status", to_string(r.status)},
                                                {"triggered", r.triggered},
                                                {"violations", r.violations},
                                                {"datapoints", r.datapoints},
                                                {"evidence", r.evidence},
                                                {"recommendation", r.recommendation}}));
  }
  SPROF_TRY_STATUS(rules.finish());
  return written;
}

}  // namespace sprof::report
