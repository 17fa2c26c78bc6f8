// speedscope JSON (https://www.speedscope.app/file-format-schema.json): one sampled profile per
// (pid, thread), like py-spy's, but weighted by each sample's measured interval in µs.

#include <algorithm>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sprof/sample_report.hpp"
#include "sprof/version.hpp"

namespace sprof::report {

uint64_t write_speedscope(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out) {
  using nlohmann::ordered_json;
  std::map<std::tuple<std::string, std::string, int32_t>, size_t> frame_index;
  ordered_json frames = ordered_json::array();
  ordered_json profiles = ordered_json::array();
  std::vector<uint32_t> stack;
  uint64_t total = 0;

  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (!filter.keeps_process(log.pid())) continue;
    // Per thread: samples as frame-index lists (root first) and weights.
    struct Thread {
      ordered_json samples = ordered_json::array();
      ordered_json weights = ordered_json::array();
      int64_t sum_us = 0;
    };
    std::vector<Thread> threads(log.threads().size());
    // Stack id, with 1 << 32 for an idle sample (its stack ends in a kWaitingFrame leaf: the
    // thread waited there) -> shared frame indices.
    std::map<uint64_t, std::vector<size_t>> stack_cache;
    const std::vector<bool> mask = filter.thread_mask(log);
    for_each_window_sample(filter, log, [&](const store::SampleRecord& r) {
      if (!filter.keeps(r, mask)) return;
      const uint64_t key = r.stack | (r.idle() ? uint64_t{1} << 32 : 0);
      auto cached = stack_cache.find(key);
      if (cached == stack_cache.end()) {
        log.stack_frames(r.stack, stack);
        std::vector<size_t> indices;
        for (size_t i = stack.size(); i-- > 0;) {
          const store::LogFrame& frame = log.frames()[stack[i]];
          const store::LogFunction& fn = log.functions()[frame.function];
          auto key = std::make_tuple(fn.name, fn.file, frame.line);
          auto it = frame_index.find(key);
          if (it == frame_index.end()) {
            it = frame_index.emplace(key, frames.size()).first;
            frames.push_back({{"name", fn.name}, {"file", fn.file}, {"line", frame.line}});
          }
          indices.push_back(it->second);
        }
        if (r.idle()) {
          auto [it, added] = frame_index.emplace(std::make_tuple(std::string(kWaitingFrame), std::string(), 0),
                                                 frames.size());
          if (added) frames.push_back({{"name", kWaitingFrame}});
          indices.push_back(it->second);
        }
        cached = stack_cache.emplace(key, std::move(indices)).first;
      }
      Thread& t = threads[r.thread];
      t.samples.push_back(cached->second);
      int64_t us = std::max<int64_t>(r.weight_ns / 1000, 0);
      t.weights.push_back(us);
      t.sum_us += us;
      ++total;
    });
    for (size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].samples.empty()) continue;
      const store::LogThread& th = log.threads()[i];
      std::string name = fmt::format("pid {} {} (tid {})", log.pid(), th.name.empty() ? "thread" : th.name,
                                     th.native_tid != 0 ? uint64_t(th.native_tid) : th.python_thread_id);
      ordered_json prof;
      prof["type"] = "sampled";
      prof["name"] = name;
      prof["unit"] = "microseconds";
      prof["startValue"] = 0;
      prof["endValue"] = threads[i].sum_us;
      prof["samples"] = std::move(threads[i].samples);
      prof["weights"] = std::move(threads[i].weights);
      profiles.push_back(std::move(prof));
    }
  }
  ordered_json doc;
  doc["$schema"] = "https://www.speedscope.app/file-format-schema.json";
  doc["name"] = profile.dir.filename().empty() ? profile.dir.parent_path().filename().string()
                                               : profile.dir.filename().string();
  doc["activeProfileIndex"] = 0;
  doc["exporter"] = std::string("sprof@") + kVersion;
  doc["shared"] = {{"frames", std::move(frames)}};
  doc["profiles"] = std::move(profiles);
  out += doc.dump();
  out += '\n';
  return total;
}

}  // namespace sprof::report
