#pragma once
// `sprof dump`'s output: every thread's stack as py-spy dump prints it, or one JSON object.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "sprof/pyframes.hpp"

namespace sprof::render {

class StackDump {
 public:
  explicit StackDump(pyframes::PythonProcess& process) : process_(process) {}

  // "Process PID: COMMAND\nPython vX.Y.Z\n".
  std::string header(const std::string& command) const;
  // The threads, state (active/idle, +gil), names and frames; a numbered sample heading when
  // `sample` is set (dump --count), stamped with `unix_time`.
  std::string text(const pyframes::StackSnapshot& snapshot, std::optional<int> sample, double unix_time);
  // {pid, python_version, time, blocking, threads: [...], stats: {...}} on one line.
  std::string json(const pyframes::StackSnapshot& snapshot, bool blocking, double unix_time);

 private:
  std::string name_of(const pyframes::ThreadStack& stack);

  pyframes::PythonProcess& process_;
  // Names are cached per thread: glibc reuses pthread_t values (python thread ids) for new
  // threads, kernel TIDs are not reused that soon, so the pair identifies a thread.
  std::map<std::pair<uint64_t, int32_t>, std::optional<std::string>> names_;
};

// `sprof dump`: `count` snapshots of `process`'s threads, `interval_s` apart, printed on stdout as
// they are read (text under a header naming `command`, or one JSON object each). A one-off
// non-blocking dump re-reads a torn stack and warns about those it leaves out.
struct DumpRequest {
  bool json = false;
  bool blocking = true;
  int count = 1;
  double interval_s = 1.0;
  std::string command;  // the process's command line, for the text header
};
Status print_stack_dumps(pyframes::PythonProcess& process, const DumpRequest& request);

}  // namespace sprof::render
