#pragma once
// Where a node's profile goes under a job's prefix: the whole profile under nodes/<host>/ (each
// node's sprof.json, markers, sample logs and GPU files apart, so nodes never overwrite each
// other), and its framework/ and system/ files also at the top, where smdebug's readers and the
// stats queries find every node's (their names carry the node id already).

#include <filesystem>
#include <string>
#include <vector>

#include "sprof/s3.hpp"

namespace sprof::remote {

inline constexpr const char* kNodesDir = "nodes";

// Rewritten, with new content, by every upload into a prefix, last: a reader that kept the
// prefix's listing sees from this object's ETag that objects were added or removed since.
inline constexpr const char* kGenerationFile = "sprof-generation.json";

inline std::vector<std::string> job_keys(const std::string& prefix, const std::string& host,
                                         const std::filesystem::path& rel) {
  std::string base = prefix.empty() ? std::string() : prefix + "/";
  std::string r = rel.generic_string();
  if (host.empty()) return {base + r};
  std::vector<std::string> keys{base + kNodesDir + "/" + host + "/" + r};
  std::string first = rel.begin() == rel.end() ? std::string() : rel.begin()->string();
  if (first == "framework" || first == "system") keys.push_back(base + r);
  return keys;
}

// Writes the job's generation marker (and its node's, for a host) with new content: every upload
// into a job's prefix ends with it (s3_upload.cpp).
Status write_generation_markers(S3Client& client, const S3Location& job, const std::string& host);

}  // namespace sprof::remote
