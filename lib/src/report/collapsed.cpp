// Collapsed ("folded") stacks: flamegraph.pl's input, also read by speedscope and Perfetto.

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "sprof/sample_report.hpp"

namespace sprof::report {

namespace {

// ';' separates frames and a trailing " <digits>" would read as the count: keep both out.
void append_clean(std::string& out, std::string_view text) {
  for (char c : text) out.push_back(c == ';' ? ':' : (c == '\n' ? ' ' : c));
}

std::string process_frame(const store::ProcessSamples& p) {
  std::string frame = fmt::format("process {}", p.log.pid());
  if (p.process != nullptr && !p.process->cmdline.empty()) {
    std::string command;
    for (const auto& a : p.process->cmdline) {
      if (!command.empty()) command += ' ';
      command += a;
    }
    frame += ":\"";
    append_clean(frame, command);
    frame += '"';
  }
  return frame;
}

}  // namespace

uint64_t write_collapsed(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out) {
  std::map<std::string, uint64_t> lines;
  std::vector<uint32_t> frames;
  size_t processes = 0;
  for (const auto& p : profile.processes) {
    if (filter.keeps_process(p.log.pid())) processes += p.log.sample_count() > 0 ? 1 : 0;
  }
  uint64_t total = 0;
  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (!filter.keeps_process(log.pid())) continue;
    std::unordered_map<uint32_t, uint64_t> counts;
    for_each_window_sample(filter, log, [&](const store::SampleRecord& r) {
      if (filter.keeps(r)) ++counts[r.stack];
    });
    std::string prefix = processes > 1 ? process_frame(p) : std::string();
    for (const auto& [stack, count] : counts) {
      log.stack_frames(stack, frames);
      std::string line = prefix;
      for (size_t i = frames.size(); i-- > 0;) {
        const store::LogFrame& frame = log.frames()[frames[i]];
        const store::LogFunction& fn = log.functions()[frame.function];
        if (!line.empty()) line += ';';
        append_clean(line, fn.name);
        line += " (";
        append_clean(line, fn.file);
        line += fmt::format(":{})", frame.line);
      }
      lines[line] += count;
      total += count;
    }
  }
  std::vector<std::pair<std::string, uint64_t>> sorted(lines.begin(), lines.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [line, count] : sorted) fmt::format_to(std::back_inserter(out), "{} {}\n", line, count);
  return total;
}

}  // namespace sprof::report
