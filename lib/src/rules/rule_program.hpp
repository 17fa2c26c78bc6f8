#pragma once
// One running rule program: records go to its stdin, verdicts come from its stdout, both over one
// socket pair so a program that has gone away is an error (EPIPE), never SIGPIPE.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sprof/custom_rules.hpp"

namespace sprof::rules {

class RuleProgram {
 public:
  RuleProgram(const ProgramRule& rule, double timeout_s, std::vector<std::string> env);
  ~RuleProgram();
  RuleProgram(const RuleProgram&) = delete;
  RuleProgram& operator=(const RuleProgram&) = delete;

  // Writes `records` (JSON lines, each ending in '\n') and {"type":"evaluate","seq":seq,
  // "final":final}, and returns the program's answer: its next line that is not blank, as
  // written (read_verdict() reads it). The timeout runs from the last time the program read some
  // of its input. The error says why the program cannot be used any more (it could not start,
  // exited, wrote a line over 1 MiB, or did not answer in time); the program is killed then.
  Result<std::string> exchange(std::string records, int64_t seq, bool final);
  // Ends its input and waits a little for it to exit; kills it otherwise.
  void close();

 private:
  Status start();
  void kill_and_reap();
  std::string exit_description(bool wait);

  ProgramRule rule_;
  double timeout_s_;
  std::vector<std::string> env_;
  pid_t pid_ = -1;
  pid_t group_ = -1;  // its process group: what it started goes with it
  int fd_ = -1;
  std::string input_;  // what it wrote that is not yet a whole line
};

}  // namespace sprof::rules
