// GPU time by Python call site: op -> launch call (correlation id) -> the launching thread's
// sample nearest the launch -> the Python line. CUPTI's thread ids are system thread ids
// (the injection asks for CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), the sampler's native tids.

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "sprof/gpu_report.hpp"
#include "sprof/profile_samples.hpp"

namespace sprof::report {
namespace {

struct ThreadSample {
  int64_t time_ns = 0;
  int64_t weight_ns = 0;
  uint32_t stack = 0;
};

struct Site {
  std::string file;
  int32_t line = 0;
  std::string function;
  std::string why;
  bool operator<(const Site& o) const { return std::tie(file, line, function, why) < std::tie(o.file, o.line, o.function, o.why); }
};

// Library code: the standard library and installed packages. The user's code is the rest.
bool library_file(std::string_view file) {
  return file.find("/site-packages/") != std::string_view::npos || file.find("/dist-packages/") != std::string_view::npos ||
         file.find("/lib/python") != std::string_view::npos || file.rfind("<frozen", 0) == 0 || file.empty() ||
         file.front() == '<';
}

uint64_t thread_key(int32_t pid, int32_t tid) { return (uint64_t(uint32_t(pid)) << 32) | uint32_t(tid); }

}  // namespace

Result<std::vector<CallSite>> call_sites(const GpuInput& input, const std::filesystem::path& profile_dir,
                                         const GpuSelection& selection, const CallSiteOptions& options) {
  if (!input.profile) {
    return make_error(ErrorKind::usage, "callsites needs a profile directory recorded by sprof (samples give the Python "
                                        "lines); a trace file has none");
  }
  SPROF_TRY(store::ProfileSamples profile, store::load_profile_samples(profile_dir));

  std::unordered_map<int64_t, const store::GpuApiCall*> calls;
  std::unordered_map<uint64_t, bool> wanted_threads;
  for (const store::GpuApiCall& call : input.trace.api_calls) {
    if (call.correlation == 0) continue;
    calls.emplace(call.correlation, &call);
    wanted_threads[thread_key(call.pid, call.tid)] = true;
  }

  // The samples of the threads that launched GPU work, per (pid, tid), in time order.
  struct ThreadSamples {
    const store::SampleLog* log = nullptr;
    std::vector<ThreadSample> samples;
  };
  std::unordered_map<uint64_t, ThreadSamples> threads;
  for (const store::ProcessSamples& p : profile.processes) {
    const store::SampleLog& log = p.log;
    std::vector<int32_t> tid_of(log.threads().size());
    for (size_t i = 0; i < tid_of.size(); ++i) tid_of[i] = log.threads()[i].native_tid;
    log.for_each_sample([&](const store::SampleRecord& r) {
      uint64_t key = thread_key(log.pid(), tid_of[r.thread]);
      if (!wanted_threads.count(key)) return;
      ThreadSamples& t = threads[key];
      t.log = &log;
      t.samples.push_back({r.time_ns, r.weight_ns, r.stack});
    });
  }

  // One site per launch call.
  std::unordered_map<int64_t, Site> site_of_call;
  std::vector<uint32_t> frames;
  auto site_for = [&](const store::GpuApiCall& call) -> Site {
    auto it = threads.find(thread_key(call.pid, call.tid));
    if (it == threads.end() || it->second.samples.empty()) {
      return {"", 0, "", fmt::format("no samples of the launching thread (pid {}, tid {})", call.pid, call.tid)};
    }
    const std::vector<ThreadSample>& s = it->second.samples;
    int64_t middle = call.start_ns + (call.end_ns - call.start_ns) / 2;
    auto after = std::lower_bound(s.begin(), s.end(), middle, [](const ThreadSample& a, int64_t t) { return a.time_ns < t; });
    const ThreadSample* best = nullptr;
    int64_t best_distance = INT64_MAX;
    for (auto candidate : {after, after == s.begin() ? s.end() : after - 1}) {
      if (candidate == s.end()) continue;
      int64_t distance = std::abs(candidate->time_ns - middle);
      if (distance < best_distance) {
        best = &*candidate;
        best_distance = distance;
      }
    }
    // A sample stands for the interval since the thread's previous tick (its weight): a launch
    // inside the interval of the sample after it was sampled around; elsewhere (before the first
    // sample, after the last, across a pause) only a sample within twice its interval counts.
    bool covered = after != s.end() && after->time_ns - after->weight_ns <= middle && after != s.begin();
    int64_t limit = options.max_distance_ns > 0 ? options.max_distance_ns : 2 * std::max<int64_t>(best->weight_ns, 1'000'000);
    if ((options.max_distance_ns > 0 || !covered) && best_distance > limit) {
      return {"", 0, "", "no sample of the launching thread near the launch"};
    }
    const store::SampleLog& log = *it->second.log;
    log.stack_frames(best->stack, frames);  // leaf first
    if (frames.empty()) return {"", 0, "", "the launching thread had no Python frames"};
    const store::LogFrame* chosen = &log.frames()[frames.front()];
    if (!options.leaf) {
      for (uint32_t f : frames) {
        const store::LogFrame& frame = log.frames()[f];
        if (!library_file(log.functions()[frame.function].file)) {
          chosen = &frame;
          break;
        }
      }
    }
    const store::LogFunction& function = log.functions()[chosen->function];
    return {function.file, chosen->line, function.name, ""};
  };

  struct Acc {
    int64_t gpu_ns = 0, kernels = 0, copies = 0;
    std::map<int64_t, bool> launches;
    std::map<std::string, CallSiteKernel> kernel_names;
  };
  std::map<Site, Acc> by_site;
  int64_t all = 0;
  for (const store::GpuOp& op : input.trace.ops) {
    if ((selection.device && op.device != *selection.device) || !selection.contains(op.start_ns)) continue;
    Site site;
    auto call = calls.find(op.correlation);
    if (op.correlation == 0 || call == calls.end()) {
      site.why = "no launch call recorded for it";
    } else {
      auto cached = site_of_call.find(op.correlation);
      if (cached == site_of_call.end()) cached = site_of_call.emplace(op.correlation, site_for(*call->second)).first;
      site = cached->second;
    }
    Acc& acc = by_site[site];
    acc.gpu_ns += op.duration_ns();
    all += op.duration_ns();
    if (op.correlation != 0) acc.launches[op.correlation] = true;
    if (op.kind == store::GpuOpKind::kernel) {
      ++acc.kernels;
      CallSiteKernel& k = acc.kernel_names[op.name];
      k.name = op.name;
      k.total_ns += op.duration_ns();
      ++k.count;
    } else {
      ++acc.copies;
    }
  }

  std::vector<CallSite> out;
  for (auto& [site, acc] : by_site) {
    CallSite row;
    row.file = site.file;
    row.line = site.line;
    row.function = site.function;
    row.why_unattributed = site.why;
    row.gpu_ns = acc.gpu_ns;
    row.share = all > 0 ? double(acc.gpu_ns) / double(all) : 0;
    row.kernels = acc.kernels;
    row.copies = acc.copies;
    row.launches = int64_t(acc.launches.size());
    for (auto& [name, k] : acc.kernel_names) row.top_kernels.push_back(k);
    std::sort(row.top_kernels.begin(), row.top_kernels.end(),
              [](const CallSiteKernel& a, const CallSiteKernel& b) { return a.total_ns > b.total_ns; });
    if (row.top_kernels.size() > 3) row.top_kernels.resize(3);
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) {
    if (a.gpu_ns != b.gpu_ns) return a.gpu_ns > b.gpu_ns;
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  return out;
}

}  // namespace sprof::report
