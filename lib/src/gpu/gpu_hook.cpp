#include <cstdlib>
#include <map>
#include <utility>
#include <system_error>

#include <spdlog/spdlog.h>

#include "sprof/gpu_hook.hpp"

namespace sprof::gpu {
namespace fs = std::filesystem;

namespace {

constexpr const char* kInjectionVariable = "CUDA_INJECTION64_PATH";

fs::path states_dir(const fs::path& output_dir) { return output_dir / "gpu"; }

bool machine_has_driver() {
  std::error_code ec;
  return fs::exists("/proc/driver/nvidia/version", ec);
}

}  // namespace

Status GpuRecordHook::prepare_child(const fs::path& output_dir, launch::ChildSetup& setup) {
  launched_ = true;
  driver_ = machine_has_driver();
  if (!plan_.enabled) return {};
  // nsys and compute-sanitizer inject themselves through the same variable, and only one
  // library fits in it: theirs stays.
  if (const char* current = std::getenv(kInjectionVariable); current != nullptr && *current != '\0') {
    spdlog::warn("{} is already set ({}: nsys or compute-sanitizer?); leaving it, so sprof does not trace the GPU",
                 kInjectionVariable, current);
    plan_.enabled = false;
    plan_.why_off = fmt::format("{} was already set to {}", kInjectionVariable, current);
    return {};
  }
  if (!driver_) {
    // Said once (loudly only when asked for); the variable is still set, so a driver that only a
    // container sees still works.
    auto level = plan_.mode == GpuMode::on ? spdlog::level::warn : spdlog::level::debug;
    spdlog::log(level, "no NVIDIA driver on this machine (no /proc/driver/nvidia): no GPU activity to trace");
  }
  fs::path dir = states_dir(output_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", dir.string(), ec.message());
  setup.env.emplace_back(kInjectionVariable, plan_.library.string());
  setup.env.emplace_back("SPROF_GPU_DIR", fs::absolute(dir, ec).string());
  if (!plan_.cupti.empty()) setup.env.emplace_back("SPROF_CUPTI_PATH", plan_.cupti.string());
  return {};
}

void GpuRecordHook::on_start(const launch::RecordContext&) {
  if (!launched_ && plan_.enabled) {
    // --pid: the driver of a running process initialised long ago.
    plan_.enabled = false;
    plan_.why_off = "attached to a running process: the injection library can only be given to a launched command";
    driver_ = machine_has_driver();
  }
}

Status GpuRecordHook::on_finish(const fs::path& output_dir, store::Manifest& manifest) {
  GpuSection section;
  section.mode = std::string(to_string(plan_.mode));
  section.enabled = plan_.enabled;
  if (plan_.enabled) section.library = plan_.library.string();
  section.cupti = plan_.cupti.empty() ? std::string(kCuptiOrder) : "--cupti " + plan_.cupti.string();
  section.why_off = plan_.why_off;
  section.driver = driver_;
  std::vector<std::string> problems;
  section.processes = read_gpu_states(states_dir(output_dir), problems);
  for (const std::string& p : problems) spdlog::warn("GPU state: {}", p);

  // One line per distinct finding, however many ranks share it.
  std::map<std::pair<std::string, std::string>, std::vector<int32_t>> by_finding;  // (state, detail)
  for (const GpuProcessState& p : section.processes) by_finding[{p.state, p.detail}].push_back(p.pid);
  for (const auto& [finding, pids] : by_finding) {
    const auto& [state, detail] = finding;
    std::string who = pids.size() == 1 ? fmt::format("pid {}", pids.front())
                                       : fmt::format("{} processes (pid {}, ...)", pids.size(), pids.front());
    if (state == "recording") {
      spdlog::info("GPU: {}: {}", who, detail);
    } else {
      spdlog::warn("no GPU tracing in {}: {}", who, detail);
    }
  }
  int64_t records = 0, dropped = 0, untimed = 0, ended = 0;
  for (const GpuProcessState& p : section.processes) {
    if (p.state != "recording") continue;
    if (!p.counts) {
      ++ended;
      continue;
    }
    records += p.counts->records;
    dropped += p.counts->dropped;
    untimed += p.counts->untimed;
  }
  if (records > 0 || dropped > 0) spdlog::info("GPU: {} activity records written", records);
  if (dropped > 0) {
    spdlog::warn("GPU: CUPTI dropped {} activity records (its buffers were full); kernel times are incomplete", dropped);
  }
  if (untimed > 0) spdlog::info("GPU: {} activity records had no timestamps and were left out", untimed);
  if (ended > 0) {
    spdlog::info("GPU: {} traced process(es) did not exit normally (os._exit or a signal): their last second of "
                 "activity may be missing",
                 ended);
  }
  set_gpu_section(manifest, section);
  return {};
}

}  // namespace sprof::gpu
