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

std::optional<StackFormat> parse_stack_format(std::string_view name) {
  if (name == "collapsed" || name == "raw") return StackFormat::collapsed;
  if (name == "speedscope") return StackFormat::speedscope;
  if (name == "flamegraph") return StackFormat::flamegraph;
  return std::nullopt;
}

uint64_t write_stacks(StackFormat format, const store::ProfileSamples& profile, const SampleFilter& filter,
                      const std::string& title, std::string& out) {
  switch (format) {
    case StackFormat::speedscope: return write_speedscope(profile, filter, out);
    case StackFormat::flamegraph: {
      FlamegraphOptions graph;
      graph.title = title;
      return write_flamegraph_svg(profile, filter, graph, out);
    }
    case StackFormat::collapsed: break;
  }
  return write_collapsed(profile, filter, out);
}

std::vector<std::string> fold_import_machinery(const std::vector<std::string>& frames) {
  std::vector<std::string> out;
  out.reserve(frames.size());
  bool in_run = false;
  for (const std::string& frame : frames) {
    // Frames read "name (file:line)".
    const bool machinery = frame.find(" (<frozen importlib._bootstrap") != std::string::npos;
    if (machinery && in_run) continue;
    in_run = machinery;
    out.push_back(machinery ? std::string(kImportFrame) : frame);
  }
  return out;
}

std::vector<FoldedStack> fold_stacks(const store::ProfileSamples& profile, const SampleFilter& filter) {
  std::map<std::vector<std::string>, uint64_t> stacks;
  std::vector<uint32_t> frames;
  size_t processes = 0;
  for (const auto& p : profile.processes) {
    if (filter.keeps_process(p.log.pid())) processes += p.log.sample_count() > 0 ? 1 : 0;
  }
  for (const auto& p : profile.processes) {
    const store::SampleLog& log = p.log;
    if (!filter.keeps_process(log.pid())) continue;
    // By stack id, twice for idle samples (id | 1 << 32), whose stacks end in kWaitingFrame.
    std::unordered_map<uint64_t, uint64_t> counts;
    const std::vector<bool> mask = filter.thread_mask(log);
    for_each_window_sample(filter, log, [&](const store::SampleRecord& r) {
      if (filter.keeps(r, mask)) ++counts[r.stack | (r.idle() ? uint64_t{1} << 32 : 0)];
    });
    const std::string prefix = processes > 1 ? process_frame(p) : std::string();
    for (const auto& [key, count] : counts) {
      log.stack_frames(static_cast<uint32_t>(key), frames);
      std::vector<std::string> names;
      if (!prefix.empty()) names.push_back(prefix);
      for (size_t i = frames.size(); i-- > 0;) {
        const store::LogFrame& frame = log.frames()[frames[i]];
        const store::LogFunction& fn = log.functions()[frame.function];
        std::string name;
        append_clean(name, fn.name);
        name += " (";
        append_clean(name, fn.file);
        name += fmt::format(":{})", frame.line);
        names.push_back(std::move(name));
      }
      if (key >> 32) names.push_back(kWaitingFrame);
      stacks[std::move(names)] += count;
    }
  }
  // Ties in the order of the folded lines' text, as flamegraph.pl's input is usually sorted.
  std::vector<std::pair<std::string, FoldedStack>> keyed;
  keyed.reserve(stacks.size());
  for (auto& [names, count] : stacks) {
    std::string line;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) line += ';';
      line += names[i];
    }
    keyed.push_back({std::move(line), FoldedStack{names, count}});
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.second.count != b.second.count ? a.second.count > b.second.count : a.first < b.first;
  });
  std::vector<FoldedStack> out;
  out.reserve(keyed.size());
  for (auto& k : keyed) out.push_back(std::move(k.second));
  return out;
}

uint64_t write_collapsed(const store::ProfileSamples& profile, const SampleFilter& filter, std::string& out) {
  uint64_t total = 0;
  for (const FoldedStack& s : fold_stacks(profile, filter)) {
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (i > 0) out += ';';
      out += s.frames[i];
    }
    fmt::format_to(std::back_inserter(out), " {}\n", s.count);
    total += s.count;
  }
  return total;
}

}  // namespace sprof::report
