#pragma once
// The exit codes sprof documents in man/sprof.1 (EXIT STATUS). `record` instead
// passes the target's own status through (128+N when it died of signal N).

namespace sprof {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitRuntime = 1;       // I/O, S3, a target that could not be sampled
inline constexpr int kExitUsage = 2;         // bad flags or bad input files
inline constexpr int kExitIssuesFound = 3;   // rules/analyze found issues --fail-on asked about

}  // namespace sprof
