// The HTML report's data beyond the analyze page: flame graphs per view, system time series.

#include "sprof/report_views.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "report/report_timeline.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/sample_report.hpp"
#include "sprof/system_metrics.hpp"

namespace sprof::report {

namespace {

FlameNode& child_named(FlameNode& parent, const std::string& name) {
  for (FlameNode& c : parent.children) {
    if (c.name == name) return c;
  }
  parent.children.push_back(FlameNode{name, 0, {}});
  return parent.children.back();
}

// Frames under `min_value` samples go (their samples stay in their parent's value: shown as the
// parent's self time, as flame graphs show frames too narrow to draw).
void prune(FlameNode& n, uint64_t min_value) {
  std::erase_if(n.children, [&](const FlameNode& c) { return c.value < min_value; });
  std::sort(n.children.begin(), n.children.end(), [](const FlameNode& a, const FlameNode& b) { return a.name < b.name; });
  for (FlameNode& c : n.children) prune(c, min_value);
}

FlameView build_view(const store::ProfileSamples& samples, const SampleFilter& filter, std::string id, std::string label,
                     double min_share) {
  FlameView view;
  view.id = std::move(id);
  view.label = std::move(label);
  view.root.name = "all";
  for (const FoldedStack& s : fold_stacks(samples, filter)) {
    view.root.value += s.count;
    FlameNode* n = &view.root;
    for (const std::string& frame : fold_import_machinery(s.frames)) {
      n = &child_named(*n, frame);
      n->value += s.count;
    }
  }
  view.samples = view.root.value;
  const auto min_value = static_cast<uint64_t>(std::ceil(static_cast<double>(view.root.value) * min_share));
  prune(view.root, std::max<uint64_t>(min_value, 1));
  return view;
}

// Windows sorted by (pid, begin) and disjoint, as SampleFilter wants them.
std::vector<SampleWindow> normalized(std::vector<SampleWindow> windows) {
  std::sort(windows.begin(), windows.end(),
            [](const SampleWindow& a, const SampleWindow& b) { return std::tie(a.pid, a.begin_ns) < std::tie(b.pid, b.begin_ns); });
  std::vector<SampleWindow> out;
  for (const SampleWindow& w : windows) {
    if (w.end_ns <= w.begin_ns) continue;
    if (!out.empty() && out.back().pid == w.pid && w.begin_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, w.end_ns);
    } else {
      out.push_back(w);
    }
  }
  return out;
}

void add_flames(const AnalyzeReport& report, const store::ProfileSamples& samples, const ReportViewOptions& options,
                ReportViews& views) {
  const store::Manifest& m = *samples.manifest;
  auto to_ns = [&m](int64_t epoch_us) { return m.to_monotonic_ns(epoch_us); };
  // The page's own view (analyze's: by default the step threads' wall time, waits marked
  // [waiting]) first, then its opposite number: on-CPU time of every thread, or wall time.
  const SampleFilter page = time_view_filter(report.time_view, report.step_threads);
  views.flames.push_back(build_view(samples, page, "all", "whole run, " + report.time_view.describe(), options.min_share));
  TimeView other{!report.time_view.on_cpu, !report.time_view.on_cpu || report.time_view.all_threads};
  views.flames.push_back(build_view(samples, time_view_filter(other, report.step_threads), "other",
                                    "whole run, " + other.describe(), options.min_share));
  // With several processes (DataLoader workers, ranks), each one's run: the page's process filter.
  if (samples.processes.size() > 1) {
    for (const auto& p : samples.processes) {
      if (p.log.sample_count() == 0) continue;
      SampleFilter f = page;
      f.pid = p.log.pid();
      views.flames.push_back(build_view(samples, f, fmt::format("process:{}", p.log.pid()),
                                        fmt::format("process {}, whole run, {}", p.log.pid(), report.time_view.describe()),
                                        options.min_share));
    }
  }

  // Modes, in the order they first ran.
  std::vector<std::string> modes;
  for (const StepRecord& s : report.steps) {
    if (std::find(modes.begin(), modes.end(), s.mode) == modes.end()) modes.push_back(s.mode);
  }
  for (const std::string& mode : modes) {
    std::vector<SampleWindow> windows;
    for (const StepRecord& s : report.steps) {
      if (s.mode == mode) windows.push_back({static_cast<int32_t>(s.pid), to_ns(s.start_us), to_ns(s.end_us)});
    }
    SampleFilter f = page;
    f.windows = normalized(std::move(windows));
    views.flames.push_back(build_view(samples, f, "mode:" + mode,
                                      fmt::format("{} steps, {}", mode, report.time_view.describe()), options.min_share));
  }
  // Job phases: every process's samples in the phase's time.
  for (const JobPhase& phase : report.phases) {
    std::vector<SampleWindow> windows;
    for (const auto& p : samples.processes) windows.push_back({p.log.pid(), to_ns(phase.start_us), to_ns(phase.end_us)});
    SampleFilter f = page;
    f.windows = normalized(std::move(windows));
    views.flames.push_back(build_view(samples, f, "phase:" + phase.name,
                                      fmt::format("phase {}, {}", phase.name, report.time_view.describe()),
                                      options.min_share));
  }
  // Steps, longest first up to the cap, then listed in run order, in the page's view (by default
  // wall time: a step that waits, for data or the GPU, shows where).
  std::vector<size_t> order(report.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return report.steps[a].seconds() > report.steps[b].seconds(); });
  if (order.size() > options.max_step_views) {
    views.flames_note = fmt::format("flame graphs of the {} longest of {} steps", options.max_step_views, order.size());
    order.resize(options.max_step_views);
  }
  std::sort(order.begin(), order.end());
  for (size_t i : order) {
    const StepRecord& s = report.steps[i];
    SampleFilter f = page;
    f.windows = std::vector<SampleWindow>{{static_cast<int32_t>(s.pid), to_ns(s.start_us), to_ns(s.end_us)}};
    views.flames.push_back(build_view(samples, f, fmt::format("step:{}:{}:{}", s.pid, s.mode, s.step),
                                      fmt::format("{} step {} (pid {}, {:.3f} s), {}", s.mode, s.step, s.pid,
                                                  s.seconds(), report.time_view.describe()),
                                      options.min_share));
  }
}

std::string unit_of(const std::string& what) {
  if (what.find("Percent") != std::string::npos || what.find("Utilization") != std::string::npos) return "%";
  if (what.find("Resident") != std::string::npos) return "B";
  if (what.find("PerSecond") != std::string::npos || what.find("Throughput") != std::string::npos) return "B/s";
  return "";
}

// Per node: one series per (type, dimension) averaged over the devices of a kind (cpu0, cpu1,
// ...), per-core CPU lines up to 16 cores, and one per named metric of the other kinds.
void add_system(const AnalyzeReport& report, const std::vector<store::SystemMetric>& metrics,
                const ReportViewOptions& options, ReportViews& views) {
  std::map<std::string, std::vector<const store::SystemMetric*>> by_node;
  for (const auto& m : metrics) by_node[m.node_id].push_back(&m);
  const double start_s = static_cast<double>(report.job.start_us) / 1e6;
  for (const auto& [node, list] : by_node) {
    // Ticks: distinct timestamps to the millisecond.
    std::set<int64_t> ticks_ms;
    for (const auto* m : list) ticks_ms.insert(std::llround(m->timestamp * 1000));
    std::vector<int64_t> ticks(ticks_ms.begin(), ticks_ms.end());
    const size_t n = ticks.size();
    const size_t buckets = std::min(n, options.max_points);
    auto bucket_of = [&](int64_t t_ms) {
      size_t i = static_cast<size_t>(std::lower_bound(ticks.begin(), ticks.end(), t_ms) - ticks.begin());
      return n <= buckets ? i : i * buckets / n;
    };
    struct Acc {
      std::string unit;
      std::vector<double> sum;
      std::vector<uint32_t> count;
    };
    std::map<std::string, Acc> series;
    for (const auto* m : list) {
      std::vector<std::string> keys;
      if (m->type == "cpu" || m->type == "gpu") {
        keys.push_back(fmt::format("{} {} (mean)", m->type, m->dimension));
        // Per-core lines for the first 16 cores (cpu0 .. cpu15).
        if (m->type == "cpu" && m->dimension == "CPUUtilization" && m->name.starts_with("cpu") &&
            m->name.size() <= 5 && m->name.find_first_not_of("0123456789", 3) == std::string::npos &&
            m->name.size() > 3 && std::stoi(m->name.substr(3)) < 16) {
          keys.push_back(fmt::format("{} CPUUtilization", m->name));
        }
        if (m->type == "gpu") keys.push_back(fmt::format("{} {}", m->name, m->dimension));
      } else {
        keys.push_back(fmt::format("{} {}", m->type, m->name));
      }
      const size_t b = bucket_of(std::llround(m->timestamp * 1000));
      for (const std::string& key : keys) {
        Acc& a = series[key];
        if (a.sum.empty()) {
          a.unit = unit_of(m->dimension + m->name);
          a.sum.assign(buckets, 0);
          a.count.assign(buckets, 0);
        }
        a.sum[b] += m->value;
        ++a.count[b];
      }
    }
    SystemTimeline timeline;
    timeline.node = node;
    // Each bucket's time: the mean of its ticks.
    std::vector<double> t_sum(buckets, 0);
    std::vector<uint32_t> t_count(buckets, 0);
    for (int64_t t : ticks) {
      const size_t b = bucket_of(t);
      t_sum[b] += static_cast<double>(t) / 1000 - start_s;
      ++t_count[b];
    }
    for (size_t b = 0; b < buckets; ++b) timeline.t_s.push_back(t_count[b] ? t_sum[b] / t_count[b] : 0);
    for (auto& [name, acc] : series) {
      TimeSeries s;
      s.name = name;
      s.unit = acc.unit;
      for (size_t b = 0; b < buckets; ++b) {
        s.values.push_back(acc.count[b] ? acc.sum[b] / acc.count[b] : std::numeric_limits<double>::quiet_NaN());
      }
      timeline.series.push_back(std::move(s));
    }
    views.system.push_back(std::move(timeline));
  }
}

}  // namespace

Result<ReportViews> report_views(const query::Profile& profile, const AnalyzeReport& report,
                                 const ReportViewOptions& options) {
  ReportViews views;
  if (report.has_samples && report.job.has_manifest) {
    SPROF_TRY(const store::ProfileSamples* read, profile.samples());
    const store::ProfileSamples& samples = *read;
    if (samples.manifest) {
      views.rate_hz = samples.manifest->rate_hz;
      views.achieved_rate_hz = samples.manifest->health.achieved_rate_hz;
      views.invalid_share = samples.manifest->health.invalid_share();
      views.thread_samples = samples.manifest->health.thread_samples;
      add_flames(report, samples, options, views);
      add_thread_rows(samples, report.job.start_us, views.timeline);
    }
  }
  if (report.gpu.present) SPROF_TRY_STATUS(add_gpu_rows(profile, report.job.start_us, views.timeline));
  fit_timeline(views.timeline, report.job.duration_s(), options.max_timeline_segments);
  if (views.flames.empty()) views.flames_note = report.samples_note.empty() ? "no raw samples" : report.samples_note;
  SPROF_TRY(const std::vector<store::SystemMetric>* metrics, profile.system_metrics());
  if (metrics->empty()) {
    // analyze's note says why there are none (no monitor, a job shorter than its interval).
    views.system_note = report.system_note.empty() ? "no system metrics (system/incremental)" : report.system_note;
  } else {
    add_system(report, *metrics, options, views);
  }
  return views;
}

}  // namespace sprof::report
