#include "sprof/dump_render.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sprof::render {

std::string StackDump::name_of(const pyframes::ThreadStack& stack) {
  auto key = std::make_pair(stack.python_thread_id, stack.native_tid);
  auto it = names_.find(key);
  if (it == names_.end()) it = names_.emplace(key, process_.thread_name(stack.python_thread_id)).first;
  return it->second.value_or("");
}

std::string StackDump::header(const std::string& command) const {
  return fmt::format("Process {}: {}\nPython v{}\n", process_.pid(), command, process_.version().str());
}

std::string StackDump::text(const pyframes::StackSnapshot& snapshot, std::optional<int> sample, double unix_time) {
  std::string out;
  if (sample) {
    double whole = std::floor(unix_time);
    out += fmt::format("\n--- sample {} at {}.{:06} ---\n", *sample, static_cast<int64_t>(whole),
                       static_cast<int64_t>((unix_time - whole) * 1e6));
  }
  for (const auto& stack : snapshot.stacks) {
    std::string state = stack.on_cpu ? "active" : "idle";
    if (stack.holds_gil) state += "+gil";
    std::string name = name_of(stack);
    out += fmt::format("\nThread {:#x} (native {}) ({}){}\n", stack.python_thread_id, stack.native_tid, state,
                       name.empty() ? "" : fmt::format(": \"{}\"", name));
    if (stack.frames.empty()) out += "    (no Python frames)\n";
    for (const auto& frame : stack.frames) {
      const auto& code = process_.code(frame.code_id);
      out += fmt::format("    {} ({}:{})\n", code.name, code.filename, frame.line);
    }
    if (stack.truncated) out += "    ... (deeper frames left out)\n";
  }
  return out;
}

std::string StackDump::json(const pyframes::StackSnapshot& snapshot, bool blocking, double unix_time) {
  nlohmann::json threads = nlohmann::json::array();
  for (const auto& stack : snapshot.stacks) {
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& frame : stack.frames) {
      const auto& code = process_.code(frame.code_id);
      frames.push_back(
          {{"name", code.name}, {"file", code.filename}, {"line", frame.line}, {"first_line", code.first_line}});
    }
    std::string name = name_of(stack);
    threads.push_back({{"python_thread_id", stack.python_thread_id},
                       {"native_tid", stack.native_tid},
                       {"name", name.empty() ? nlohmann::json(nullptr) : nlohmann::json(name)},
                       {"on_cpu", stack.on_cpu},
                       {"holds_gil", stack.holds_gil},
                       {"interpreter_id", stack.interpreter_id},
                       {"truncated", stack.truncated},
                       {"frames", std::move(frames)}});
  }
  const pyframes::ReadStats& stats = snapshot.stats;
  nlohmann::json out = {{"pid", process_.pid()},
                        {"python_version", process_.version().str()},
                        {"time", unix_time},
                        {"blocking", blocking},
                        {"threads", std::move(threads)},
                        {"stats",
                         {{"thread_samples", stats.thread_samples},
                          {"invalid", stats.invalid},
                          {"retried", stats.retried},
                          {"truncated", stats.truncated},
                          {"remote_reads", stats.remote_reads},
                          {"sample_wall_us", snapshot.wall_us},
                          {"sample_cpu_us", snapshot.cpu_us}}}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace sprof::render
