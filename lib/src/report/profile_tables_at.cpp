// -f tables written to a directory or an S3 prefix.

#include <fmt/format.h>

#include "sprof/profile_tables.hpp"
#include "sprof/temp_dir.hpp"

namespace sprof::report {

Result<TablesWritten> write_profile_tables_at(const store::ProfilePath& profile_dir, const std::string& out_dir_or_url,
                                              const TablesOptions& options, const remote::S3Options& s3) {
  if (!remote::is_s3_url(out_dir_or_url)) return write_profile_tables(profile_dir, out_dir_or_url, options);
  SPROF_TRY(TempDir staging, TempDir::create("sprof-tables-"));
  SPROF_TRY(TablesWritten written, write_profile_tables(profile_dir, staging.path(), options));
  SPROF_TRY(remote::UploadSummary summary,
            remote::upload_tree(staging.path(), out_dir_or_url, s3, "table=jobs/job=" + written.job));
  if (!summary.failed.empty()) {
    return make_error(ErrorKind::io, "{}: {} of {} table files not uploaded: {}", out_dir_or_url, summary.failed.size(),
                      summary.files, fmt::join(summary.failed, ", "));
  }
  return written;
}

}  // namespace sprof::report
