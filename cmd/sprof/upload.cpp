// sprof upload: a finished local profile to S3, or the rest of one whose upload stopped.

#include <fmt/format.h>

#include "command.hpp"
#include "sprof/record_render.hpp"
#include "sprof/s3.hpp"

namespace sprof::cli {
namespace {

struct UploadFlags {
  std::string dir;
  std::string url;
};

}  // namespace

void add_upload(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<UploadFlags>();
  CLI::App* sub = app.add_subcommand(
      "upload", "Upload a local profile directory to s3://bucket/prefix, skipping what is there already (resumes)");
  sub->add_option("dir", flags->dir, "Profile directory written by sprof record")->required();
  sub->add_option("url", flags->url, "Destination, s3://bucket/prefix")->required();
  commands.push_back({sub, [flags]() -> Result<int> {
    if (!remote::is_s3_url(flags->url)) {
      return make_error(ErrorKind::usage, "upload: the destination must be s3://bucket/prefix, not {}", flags->url);
    }
    SPROF_TRY(remote::UploadSummary summary, remote::upload_directory(flags->dir, flags->url, s3_options()));
    fmt::print(stderr, "{}", render::upload_summary_text(summary, flags->dir, flags->url, global_options().quiet));
    return summary.failed.empty() ? 0 : 1;
  }});
}

}  // namespace sprof::cli
