#include "sprof/dump_render.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "sprof/clock.hpp"

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

Status print_stack_dumps(pyframes::PythonProcess& process, const DumpRequest& request) {
  StackDump dump(process);
  pyframes::SampleOptions sample_options;
  sample_options.blocking = request.blocking;
  const int retries = request.count == 1 ? 10 : 0;
  auto unix_now = [] { return static_cast<double>(realtime_ns()) / 1e9; };
  auto next = std::chrono::steady_clock::now();
  for (int i = 0; i < request.count; ++i) {
    if (i > 0) {
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(request.interval_s));
      std::this_thread::sleep_until(next);
    }
    SPROF_TRY(pyframes::StackSnapshot snapshot, pyframes::read_snapshot(process, sample_options, retries));
    if (request.count == 1 && snapshot.stats.invalid > 0) {
      spdlog::warn("{} thread stack(s) of process {} could not be read consistently and are left out; "
                   "--blocking reads them exactly",
                   snapshot.stats.invalid, process.pid());
    }
    if (request.json) {
      fmt::print("{}", dump.json(snapshot, request.blocking, unix_now()));
    } else {
      if (i == 0) fmt::print("{}", dump.header(request.command));
      fmt::print("{}", dump.text(snapshot, request.count > 1 ? std::optional<int>(i + 1) : std::nullopt, unix_now()));
    }
    std::fflush(stdout);
  }
  return {};
}

}  // namespace sprof::render
