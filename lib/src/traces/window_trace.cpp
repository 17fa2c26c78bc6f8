#include "traces/window_trace.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "sprof/gpu_trace.hpp"
#include "sprof/gzip.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/step_timeline.hpp"

namespace fs = std::filesystem;

namespace sprof::traces {

Result<report::ChromeTraceCounts> write_window_trace(const fs::path& profile_dir, const TraceWindow& w,
                                                     const store::Manifest* manifest, const fs::path& path, bool gzip,
                                                     bool overwrite) {
  std::error_code ec;
  if (!overwrite && fs::exists(path, ec)) {
    return make_error(ErrorKind::io, "{} exists already (--trace-overwrite replaces it)", path.string());
  }
  SPROF_TRY(store::ProfileSamples samples, store::load_profile_samples(profile_dir, w.pid));
  store::GpuTrace gpu;
  fs::path gpu_file = profile_dir / "gpu" / fmt::format("{}.gpu", w.pid);
  if (fs::exists(gpu_file, ec)) {
    // A chunk being appended reads as a cut tail, which the reader skips: the rest still counts.
    (void)store::read_gpu_activity_file(gpu_file, gpu);
    store::sort_gpu_trace(gpu);
  }
  SPROF_TRY(timeline::StepTimeline steps, timeline::build_profile_timeline(profile_dir, manifest));

  report::ChromeTraceParts parts;
  parts.samples = &samples;
  parts.gpu = &gpu;
  parts.steps = &steps;
  parts.filter.pid = w.pid;
  parts.filter.windows = std::vector<query::SampleWindow>{{w.pid, w.begin_ns, w.end_ns}};
  parts.range_ns = std::make_pair(w.begin_ns, w.end_ns);
  const store::Manifest* clocks = manifest != nullptr ? manifest : samples.manifest ? &*samples.manifest : nullptr;
  if (clocks != nullptr) parts.epoch_offset_ns = clocks->epoch_offset_ns();
  std::string text;
  report::ChromeTraceCounts counts = report::write_chrome_trace(parts, text);
  if (gzip) text = store::gzip(text);

  fs::create_directories(path.parent_path(), ec);
  if (ec) return make_error(ErrorKind::io, "cannot create {}: {}", path.parent_path().string(), ec.message());
  fs::path temporary = path;
  temporary += fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(temporary, ec);
      return make_error(ErrorKind::io, "cannot write {}: {}", path.string(), std::strerror(errno));
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return make_error(ErrorKind::io, "cannot write {}: {}", path.string(), ec.message());
  }
  return counts;
}

}  // namespace sprof::traces
