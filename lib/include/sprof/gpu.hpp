#pragma once
// GPU tracing with CUPTI: the choice `record --gpu` makes, the per-process states the injection
// library (libsprof_cupti.so, lib/src/gpu/injection/) writes, and the manifest's "gpu" section.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sprof/manifest.hpp"
#include "sprof/result.hpp"

namespace sprof::gpu {

enum class GpuMode { automatic, on, off };
Result<GpuMode> parse_gpu_mode(std::string_view text);  // auto | on | off; else a usage error
std::string_view to_string(GpuMode mode);

// libsprof_cupti.so, built with this sprof when CUPTI was found and installed beside libsprof.so;
// empty when it was not built or is missing.
std::filesystem::path injection_library();

// A default GpuPlan asks for nothing; plan_gpu makes the one `record --gpu` means.
struct GpuPlan {
  GpuMode mode = GpuMode::off;
  bool enabled = false;            // CUDA_INJECTION64_PATH is set for the command
  std::filesystem::path library;   // the injection library, when enabled
  std::filesystem::path cupti;     // --cupti: the libcupti to load where none is loaded yet
  std::string why_off = "not asked for";  // when not enabled, in words
};

// --gpu on without the injection library, --cupti with --gpu off and a --cupti file that does
// not exist are usage errors; auto is on exactly when the library is there.
Result<GpuPlan> plan_gpu(GpuMode mode, const std::filesystem::path& cupti);

// What the injection found in one process that initialised CUDA ($SPROF_GPU_DIR/<pid>.json).
struct GpuProcessState {
  int32_t pid = 0;
  // recording (GPU activity goes to <pid>.gpu beside the state) | no_driver | stub_driver |
  // cupti_missing | not_cupti | other_tool_attached | insufficient_privileges | driver_too_old |
  // cupti_error | output_error (<pid>.gpu cannot be created).
  std::string state;
  std::string detail;        // one line, for people
  std::string cupti;         // the libcupti file loaded, when one was
  std::string cupti_source;  // already_loaded | SPROF_CUPTI_PATH | torch | system
  uint32_t cupti_version = 0;
  // What a recording process wrote, once it exited normally (none for os._exit, SIGKILL or a
  // flush that did not finish): records and chunks written, records CUPTI dropped and records
  // without timestamps.
  struct Counts {
    int64_t records = 0;
    int64_t chunks = 0;
    int64_t dropped = 0;
    int64_t untimed = 0;
  };
  std::optional<Counts> counts;
};

Result<GpuProcessState> parse_gpu_state(std::string_view text, const std::string& source);
// Every <pid>.json under dir in pid order; a file that cannot be read or parsed is named in
// `problems` and skipped. No directory: none.
std::vector<GpuProcessState> read_gpu_states(const std::filesystem::path& dir, std::vector<std::string>& problems);

struct GpuSection {
  static constexpr std::string_view kName = "gpu";
  std::string mode;        // auto | on | off
  bool enabled = false;    // the injection library was offered to the command
  std::string library;     // its path
  std::string cupti;       // "--cupti PATH" when forced, else the order the injection follows
  std::string why_off;     // when not enabled
  bool driver = false;     // this machine has an NVIDIA driver (/proc/driver/nvidia)
  std::vector<GpuProcessState> processes;  // processes that initialised CUDA
};
void set_gpu_section(store::Manifest& manifest, const GpuSection& section);
std::optional<GpuSection> gpu_section(const store::Manifest& manifest);

// The order the injection tries libcupti in, as written into the manifest.
inline constexpr std::string_view kCuptiOrder =
    "already loaded in the process, else the one a CUDA build of torch ships, else the system's (libcupti.so.13, .12)";

}  // namespace sprof::gpu
