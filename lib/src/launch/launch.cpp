// launch.hpp's entry point: one recording, run by a RecordSession that attaches to each Python
// process it follows with pyframes.

#include "sprof/launch.hpp"

#include "launch/record_session.hpp"
#include "sprof/pyframes.hpp"

namespace sprof::launch {

Result<RecordResult> record(const RecordOptions& options, const std::vector<RecordHooks*>& hooks) {
  RecordSession session(options, hooks, [](pid_t pid) { return pyframes::PythonProcess::attach(pid); });
  return session.run();
}

}  // namespace sprof::launch
