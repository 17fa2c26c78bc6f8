#pragma once
// What `sprof record` says on stderr: its status line, and the lines it ends with (what was
// sampled, whether sampling ran late, the top functions by self time, steps, where it wrote).

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>

#include "sprof/launch.hpp"
#include "sprof/manifest.hpp"
#include "sprof/recorder.hpp"
#include "sprof/result.hpp"
#include "sprof/s3.hpp"
#include "sprof/sample_filter.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::render {

// `summary` was made with `filter` (which samples the top functions count).
// `what`: which samples the summary's functions read ("wall time of the step threads", ...).
std::string record_summary_text(const store::Manifest& manifest, const report::SampleSummary& summary,
                                const std::string& what);

// The same for the profile just written to `dir`, read back: its top functions by `view`, of
// the GIL holders only with `gil_only`. An error when the profile cannot be read.
Result<std::string> record_summary(const std::filesystem::path& dir, const store::Manifest& manifest,
                                   const report::TimeView& view, bool gil_only);

// Everything record says on stderr once the recording ended: the summary above (a warning instead
// when the profile cannot be read back), the steps found or how to mark them, the stats
// directories written, `trace_windows` (traces::trace_windows_summary), and where the profile is or
// why it is incomplete.
std::string record_closing_text(const recorder::Recording& recording, const report::TimeView& view, bool gil_only,
                                const std::string& trace_windows);

// record -o s3://: the upload's outcome, and how to finish it when files are missing.
std::string upload_closing_text(const remote::LiveUploadResult& upload);
// sprof upload DIR URL: what was uploaded (unless `quiet`), each file not uploaded and how to
// upload the rest.
std::string upload_summary_text(const remote::UploadSummary& summary, const std::string& dir, const std::string& url,
                                bool quiet);

// "writing stats directories 1200/150000" on stderr, rewritten in place, for work that takes more
// than a second, as a progress callback for the stats directories (it always says go on); an
// empty callback unless `show`.
std::function<bool(size_t done, size_t total)> stats_directories_progress(bool show);

// One status line on a terminal's stderr while record runs, rewritten in place; clear() wipes it.
class RecordStatusLine : public launch::RecordHooks {
 public:
  void on_progress(const launch::RecordProgress& progress) override;
  Status on_finish(const std::filesystem::path&, store::Manifest&) override;
  void clear();

 private:
  bool shown_ = false;
};

}  // namespace sprof::render
