#pragma once
// `sprof export DIR -f tables -o OUT`: a profile as tables any SQL engine reads (DuckDB, Spark,
// Athena, Trino): Hive-partitioned, gzip-compressed JSON Lines,
//   OUT/table=<table>/job=<job>/[node=<node>/]part-<n>.json.gz
// with the partition columns (job, node) in the path only, as Hive and Athena want them. The
// schema is docs/tables.md's. A job's files are written under its own job=... folders only, so
// a second job added to OUT never rewrites the first; a job already in OUT is refused.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sprof/profile_files.hpp"
#include "sprof/result.hpp"
#include "sprof/s3.hpp"

namespace sprof::report {

struct TablesOptions {
  std::string job;  // the job's partition value; empty: "<profile name>-<start, UTC YYYYmmddTHHMMSS>"
  uint64_t rows_per_part = 1'000'000;
};

struct TableFile {
  std::string path;  // relative to OUT, "/"-separated
  uint64_t rows = 0;
};

struct TablesWritten {
  std::string job;
  std::vector<TableFile> files;

  uint64_t rows() const {
    uint64_t n = 0;
    for (const TableFile& file : files) n += file.rows;
    return n;
  }
};

// The tables: jobs, steps, function_samples, kernels, system_metrics, rules (a table the profile
// has nothing for gets no file). A job name is made of [A-Za-z0-9._-] (others become '_').
Result<TablesWritten> write_profile_tables(const store::ProfilePath& profile_dir, const std::filesystem::path& out_dir,
                                           const TablesOptions& options);

// The same into a directory or under an s3:// prefix (written to a private local directory, then
// uploaded). A job already under the prefix is refused, as in a directory: its objects are never
// replaced. Files that could not be uploaded are an io error that names them.
Result<TablesWritten> write_profile_tables_at(const store::ProfilePath& profile_dir, const std::string& out_dir_or_url,
                                              const TablesOptions& options, const remote::S3Options& s3);

}  // namespace sprof::report
