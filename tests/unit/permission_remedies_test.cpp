// The ptrace permission explanation names only the remedies that apply on this machine.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "pyframes/proc_maps.hpp"

TEST_CASE("permission remedies: only what applies to this kernel and this target", "[pyframes]") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::string ours = sprof::pyframes::permission_remedies(child);
  std::string other = sprof::pyframes::permission_remedies(1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  INFO(ours);
  CHECK(ours.rfind("cause: ", 0) == 0);
  // sprof started it: starting it under sprof record is no remedy.
  CHECK(ours.find("sprof record -- CMD") == std::string::npos);
  if (!std::filesystem::exists("/proc/sys/kernel/yama/ptrace_scope")) {
    // No Yama in this kernel: no Yama advice.
    CHECK(ours.find("ptrace_scope") == std::string::npos);
    CHECK(other.find("ptrace_scope") == std::string::npos);
  }
  if (::geteuid() == 0) CHECK(ours.find("as root") == std::string::npos);
}
