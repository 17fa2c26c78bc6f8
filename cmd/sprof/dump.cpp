// sprof dump: print every Python thread's stack of a running process once (or --count times),
// like py-spy dump. Also the quickest way to check that sprof can read a process.

#include <time.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "option_checks.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::cli {
namespace {

struct DumpOptions {
  int pid = 0;
  bool json = false;
  bool blocking = false;
  bool nonblocking = false;
  int count = 1;
  double interval = 1.0;
};

std::string command_line(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  return raw;
}

// Wall and CPU time of the reading thread, to report what one sample costs.
struct Clocks {
  int64_t wall_ns = 0;
  int64_t cpu_ns = 0;
  static Clocks now() {
    timespec wall{};
    timespec cpu{};
    clock_gettime(CLOCK_MONOTONIC, &wall);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    return {wall.tv_sec * 1'000'000'000LL + wall.tv_nsec, cpu.tv_sec * 1'000'000'000LL + cpu.tv_nsec};
  }
};

class Dumper {
 public:
  Dumper(pyframes::PythonProcess& process, const DumpOptions& options) : process_(process), options_(options) {}

  Result<int> run() {
    pyframes::SampleOptions sample_options;
    sample_options.blocking = !options_.nonblocking;
    auto next = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.count; ++i) {
      if (i > 0) {
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(options_.interval));
        std::this_thread::sleep_until(next);
      }
      std::vector<pyframes::ThreadStack> stacks;
      pyframes::ReadStats stats;
      Clocks before = Clocks::now();
      SPROF_TRY_STATUS(process_.sample(sample_options, stacks, stats));
      Clocks after = Clocks::now();
      sample_wall_us_ = (after.wall_ns - before.wall_ns) / 1000.0;
      sample_cpu_us_ = (after.cpu_ns - before.cpu_ns) / 1000.0;
      // A one-off non-blocking dump reads again rather than print a thread's stack torn.
      for (int retry = 0; options_.count == 1 && stats.invalid > 0 && retry < 10; ++retry) {
        pyframes::ReadStats again;
        SPROF_TRY_STATUS(process_.sample(sample_options, stacks, again));
        stats.thread_samples += again.thread_samples;
        stats.retried += again.retried;
        stats.invalid = again.invalid;
      }
      if (options_.count == 1 && stats.invalid > 0) {
        spdlog::warn("{} thread stack(s) of process {} could not be read consistently and are left out; "
                     "--blocking reads them exactly",
                     stats.invalid, process_.pid());
      }
      if (options_.json) {
        print_json(stacks, stats);
      } else {
        print_text(stacks, i);
      }
      std::fflush(stdout);
    }
    return 0;
  }

 private:
  // Names are cached per thread: glibc reuses pthread_t values (python thread ids) for new
  // threads, kernel TIDs are not reused that soon, so the pair identifies a thread.
  std::string name_of(const pyframes::ThreadStack& stack) {
    auto key = std::make_pair(stack.python_thread_id, stack.native_tid);
    auto it = names_.find(key);
    if (it == names_.end()) it = names_.emplace(key, process_.thread_name(stack.python_thread_id)).first;
    return it->second.value_or("");
  }

  void print_text(const std::vector<pyframes::ThreadStack>& stacks, int index) {
    if (index == 0) {
      fmt::print("Process {}: {}\nPython v{}\n", process_.pid(), command_line(process_.pid()),
                 process_.version().str());
    }
    if (options_.count > 1) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      fmt::print("\n--- sample {} at {}.{:06} ---\n", index + 1, now.tv_sec, now.tv_nsec / 1000);
    }
    for (const auto& stack : stacks) {
      std::string state = stack.on_cpu ? "active" : "idle";
      if (stack.holds_gil) state += "+gil";
      std::string name = name_of(stack);
      fmt::print("\nThread {:#x} (native {}) ({}){}\n", stack.python_thread_id, stack.native_tid, state,
                 name.empty() ? "" : fmt::format(": \"{}\"", name));
      if (stack.frames.empty()) fmt::print("    (no Python frames)\n");
      for (const auto& frame : stack.frames) {
        const auto& code = process_.code(frame.code_id);
        fmt::print("    {} ({}:{})\n", code.name, code.filename, frame.line);
      }
      if (stack.truncated) fmt::print("    ... (deeper frames left out)\n");
    }
  }

  void print_json(const std::vector<pyframes::ThreadStack>& stacks, const pyframes::ReadStats& stats) {
    nlohmann::json threads = nlohmann::json::array();
    for (const auto& stack : stacks) {
      nlohmann::json frames = nlohmann::json::array();
      for (const auto& frame : stack.frames) {
        const auto& code = process_.code(frame.code_id);
        frames.push_back({{"name", code.name}, {"file", code.filename}, {"line", frame.line},
                          {"first_line", code.first_line}});
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
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    nlohmann::json out = {{"pid", process_.pid()},
                          {"python_version", process_.version().str()},
                          {"time", static_cast<double>(now.tv_sec) + now.tv_nsec / 1e9},
                          {"blocking", !options_.nonblocking},
                          {"threads", std::move(threads)},
                          {"stats",
                           {{"thread_samples", stats.thread_samples},
                            {"invalid", stats.invalid},
                            {"retried", stats.retried},
                            {"truncated", stats.truncated},
                            {"remote_reads", stats.remote_reads},
                            {"sample_wall_us", sample_wall_us_},
                            {"sample_cpu_us", sample_cpu_us_}}}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  pyframes::PythonProcess& process_;
  const DumpOptions& options_;
  std::map<std::pair<uint64_t, int32_t>, std::optional<std::string>> names_;
  double sample_wall_us_ = 0;  // the first read of this dump (retries of a one-off dump excluded)
  double sample_cpu_us_ = 0;
};

}  // namespace

void add_dump(CLI::App& app, CommandList& commands) {
  auto options = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand("dump", "Print the Python stack of every thread of a running process");
  cmd->add_option("-p,--pid", options->pid, "Process to read")->required()->check(CLI::PositiveNumber);
  cmd->add_flag("--json", options->json, "One JSON object per dump instead of text");
  auto* blocking = cmd->add_flag("--blocking", options->blocking,
                                 "Pause the Python threads while reading (default): exact stacks");
  auto* nonblocking = cmd->add_flag("--nonblocking", options->nonblocking,
                                    "Read without pausing the target; torn stacks are re-read or left out");
  blocking->excludes(nonblocking);
  cmd->add_option("-n,--count", options->count, "Dump this many times")->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--interval", options->interval, "Seconds between dumps with --count")
      ->check(finite_in(0, kMaxDurationS))
      ->capture_default_str();
  commands.push_back({cmd, [options]() -> Result<int> {
                        SPROF_TRY(auto process, pyframes::PythonProcess::attach(options->pid));
                        Dumper dumper(*process, *options);
                        return dumper.run();
                      }});
}

}  // namespace sprof::cli
