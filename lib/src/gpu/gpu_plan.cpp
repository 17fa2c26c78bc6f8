#include <dlfcn.h>

#include <system_error>

#include "sprof/gpu.hpp"

namespace sprof::gpu {
namespace fs = std::filesystem;

Result<GpuMode> parse_gpu_mode(std::string_view text) {
  if (text == "auto") return GpuMode::automatic;
  if (text == "on") return GpuMode::on;
  if (text == "off") return GpuMode::off;
  return make_error(ErrorKind::usage, "--gpu {}: expected auto, on or off", text);
}

std::string_view to_string(GpuMode mode) {
  switch (mode) {
    case GpuMode::automatic: return "auto";
    case GpuMode::on: return "on";
    case GpuMode::off: return "off";
  }
  return "auto";
}

fs::path injection_library() {
#ifdef SPROF_CUPTI_LIBRARY_NAME
  // Beside libsprof.so, where the build and `make install` put it.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&injection_library), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  fs::path self = fs::canonical(info.dli_fname, ec);
  if (ec) return {};
  fs::path library = self.parent_path() / SPROF_CUPTI_LIBRARY_NAME;
  return fs::is_regular_file(library, ec) ? library : fs::path();
#else
  return {};
#endif
}

Result<GpuPlan> plan_gpu(GpuMode mode, const fs::path& cupti) {
  GpuPlan plan;
  plan.mode = mode;
  plan.why_off.clear();
  if (!cupti.empty()) {
    if (mode == GpuMode::off) return make_error(ErrorKind::usage, "--cupti {} needs GPU tracing, but --gpu is off", cupti.string());
    std::error_code ec;
    if (!fs::is_regular_file(cupti, ec)) return make_error(ErrorKind::usage, "--cupti {}: no such file", cupti.string());
    plan.cupti = fs::absolute(cupti, ec).lexically_normal();
  }
  if (mode == GpuMode::off) {
    plan.why_off = "--gpu off";
    return plan;
  }
  plan.library = injection_library();
  if (plan.library.empty()) {
#ifdef SPROF_CUPTI_LIBRARY_NAME
    std::string why = "libsprof_cupti.so is missing beside libsprof.so";
#else
    std::string why = "this sprof was built without CUPTI (configure with the CUDA toolkit installed)";
#endif
    if (mode == GpuMode::on) return make_error(ErrorKind::usage, "--gpu on: {}", why);
    plan.why_off = why;
    return plan;
  }
  plan.enabled = true;
  return plan;
}

}  // namespace sprof::gpu
