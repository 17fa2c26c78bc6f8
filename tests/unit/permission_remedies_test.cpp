// The ptrace permission explanation names the cause and only the remedies that apply.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "pyframes/proc_maps.hpp"

using sprof::pyframes::PermissionFacts;
using sprof::pyframes::permission_remedies;

namespace {
bool has(const std::string& text, const char* phrase) { return text.find(phrase) != std::string::npos; }
}  // namespace

TEST_CASE("permission remedies: only what applies", "[pyframes]") {
  PermissionFacts f;
  f.pid = 42;
  SECTION("another user's process, no Yama") {
    f.target_uid = 0;
    f.my_uid = 1000;
    std::string t = permission_remedies(f);
    CHECK(has(t, "cause: process 42 runs as uid 0 and sprof as uid 1000."));
    CHECK(has(t, "same user"));
    CHECK_FALSE(has(t, "ptrace_scope"));
    CHECK_FALSE(has(t, "Yama"));
  }
  SECTION("Yama 1, not sprof's child: start it under record, or lower the scope") {
    f.target_uid = 1000;
    f.my_uid = 1000;
    f.yama_scope = 1;
    std::string t = permission_remedies(f);
    CHECK(has(t, "Yama ptrace_scope is 1"));
    CHECK(has(t, "sprof record -- CMD"));
    CHECK(has(t, "ptrace_scope to 0 (it is 1)"));
  }
  SECTION("Yama 1 but sprof started it: no 'start it under sprof record'") {
    f.target_uid = 1000;
    f.my_uid = 1000;
    f.yama_scope = 1;
    f.launched_by_me = true;
    std::string t = permission_remedies(f);
    CHECK_FALSE(has(t, "sprof record -- CMD"));
    CHECK_FALSE(has(t, "only a parent"));  // sprof is the parent: not the cause
  }
  SECTION("Yama 3: only a reboot helps") {
    f.target_uid = 0;
    f.my_uid = 0;
    f.yama_scope = 3;
    std::string t = permission_remedies(f);
    CHECK(has(t, "until reboot"));
    CHECK_FALSE(has(t, "same user"));  // root already
    CHECK_FALSE(has(t, "sprof record -- CMD"));
  }
  SECTION("root without CAP_SYS_PTRACE: the container remedy") {
    f.target_uid = 0;
    f.my_uid = 0;
    std::string t = permission_remedies(f);
    CHECK(has(t, "without the CAP_SYS_PTRACE capability"));
    CHECK(has(t, "--cap-add SYS_PTRACE"));
    CHECK_FALSE(has(t, "same user"));
  }
  SECTION("with CAP_SYS_PTRACE no capability advice") {
    f.target_uid = 0;
    f.my_uid = 0;
    f.ptrace_cap = true;
    CHECK_FALSE(has(permission_remedies(f), "CAP_SYS_PTRACE capability ("));
  }
}

TEST_CASE("permission remedies: a child of this process counts as launched by sprof", "[pyframes]") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::string ours = permission_remedies(child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  INFO(ours);
  CHECK(ours.rfind("cause: ", 0) == 0);
  CHECK_FALSE(has(ours, "sprof record -- CMD"));
}
