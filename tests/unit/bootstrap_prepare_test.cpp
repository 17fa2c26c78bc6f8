// prepare(): the embedded Python files, the environment, and the marker channel end to end with
// a real interpreter (Debian's python3).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sprof/bootstrap.hpp"
#include "sprof/step_timeline.hpp"

using namespace sprof::bootstrap;
using namespace sprof::store;
using namespace sprof::timeline;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/sprof-unit-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string variable(const BootstrapEnv& env, std::string_view name) {
  for (const auto& [key, value] : env.variables) {
    if (key == name) return value;
  }
  return "<unset>";
}

}  // namespace

TEST_CASE("the embedded Python files are the sources", "[bootstrap]") {
  const fs::path sources = fs::path(SPROF_SOURCE_DIR) / "lib/src/bootstrap/python";
  size_t on_disk = 0;
  for (const auto& entry : fs::recursive_directory_iterator(sources)) {
    if (entry.path().extension() == ".py" && entry.path().string().find("__pycache__") == std::string::npos) {
      ++on_disk;
    }
  }
  auto files = python_files();
  CHECK(files.size() == on_disk);
  bool have_sitecustomize = false;
  bool have_package = false;
  for (const EmbeddedFile& file : files) {
    INFO(file.path);
    CHECK(file.content == read_file(sources / std::string(file.path)));
    have_sitecustomize |= file.path == "sitecustomize.py";
    have_package |= file.path == "sprof/__init__.py";
  }
  CHECK(have_sitecustomize);
  CHECK(have_package);
}

TEST_CASE("prepare writes the files and names the pipe in the environment", "[bootstrap]") {
  TempDir tmp;
  auto env = prepare(tmp.path / "boot", PrepareOptions{false, std::string("/a:/b"), std::nullopt, {}, "train"});
  REQUIRE(env.ok());
  for (const EmbeddedFile& file : python_files()) {
    CHECK(read_file(env->python_dir / std::string(file.path)) == file.content);
  }
  CHECK(variable(*env, "PYTHONPATH") == (tmp.path / "boot").string() + ":/a:/b");
  CHECK(variable(*env, "SPROF_MARKER_FD") == std::to_string(env->channel.write_fd()));
  CHECK(env->channel.write_fd() >= 100);
  struct stat st {};
  REQUIRE(fstat(env->channel.write_fd(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(variable(*env, "SPROF_MARKER_INODE") == std::to_string(st.st_ino));
  CHECK(variable(*env, "SPROF_MARKER_PATH") == fmt::format("/proc/{}/fd/{}", getpid(), env->channel.write_fd()));
  CHECK(variable(*env, "SPROF_TORCH") == "0");
  CHECK((fcntl(env->channel.write_fd(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK((fcntl(env->channel.read_fd(), F_GETFL) & O_NONBLOCK) != 0);

  // An empty inherited PYTHONPATH must not turn into a trailing ':' (the current directory).
  auto bare = prepare(tmp.path / "boot2", PrepareOptions{true, std::string(), std::nullopt, {}, "train"});
  REQUIRE(bare.ok());
  CHECK(variable(*bare, "PYTHONPATH") == (tmp.path / "boot2").string());

  std::string base_path = "PYTHONPATH=/old";
  std::string base_home = "HOME=/root";
  char* base[] = {base_path.data(), base_home.data(), nullptr};
  auto merged = bare->environment(base);
  CHECK(std::count(merged.begin(), merged.end(), "HOME=/root") == 1);
  CHECK(std::count_if(merged.begin(), merged.end(), [](const std::string& e) { return e.rfind("PYTHONPATH=", 0) == 0; }) == 1);
  CHECK(std::count(merged.begin(), merged.end(), "PYTHONPATH=" + (tmp.path / "boot2").string()) == 1);
  CHECK(variable(*bare, "SPROF_STEP_FN") == "<unset>");  // only with --step-fn

  // --step-fn's names reach the bootstrap, comma separated, with their mode.
  PrepareOptions with_step_fn;
  with_step_fn.step_functions = {"train_step", "mylib.loop:Trainer.step"};
  with_step_fn.step_fn_mode = "eval";
  auto stepped = prepare(tmp.path / "boot3", with_step_fn);
  REQUIRE(stepped.ok());
  CHECK(variable(*stepped, "SPROF_STEP_FN") == "train_step,mylib.loop:Trainer.step");
  CHECK(variable(*stepped, "SPROF_STEP_FN_MODE") == "eval");
}

TEST_CASE("prepare refuses a directory PYTHONPATH cannot hold", "[bootstrap]") {
  auto env = prepare("/tmp/with:colon");
  REQUIRE_FALSE(env.ok());
  CHECK(env.error().kind == sprof::ErrorKind::usage);
  CHECK_THAT(env.error().message, Catch::Contains("/tmp/with:colon"));
}

TEST_CASE("markers from a real interpreter reach the parser and the timeline", "[bootstrap]") {
  const char* python = "/usr/bin/python3";
  if (access(python, X_OK) != 0) {
    WARN("no /usr/bin/python3: skipped");
    return;
  }
  TempDir tmp;
  auto prepared = prepare(tmp.path / "boot", PrepareOptions{false, std::string(), std::nullopt, {}, "train"});
  REQUIRE(prepared.ok());
  BootstrapEnv& env = *prepared;
  extern char** environ;
  auto environment = env.environment(environ);
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* code =
      "import sprof\n"
      "sprof.set_mode(sprof.TRAIN)\n"
      "for i in range(3):\n"
      "    with sprof.step_context():\n"
      "        sprof.forward_pass_end()\n";
  const char* argv[] = {python, "-c", code, nullptr};

  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (env.channel.inherit_in_child() != 0) _exit(126);
    execve(python, const_cast<char**>(argv), envp.data());
    _exit(127);
  }
  std::vector<Marker> markers;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    pollfd p{env.channel.read_fd(), POLLIN, 0};
    poll(&p, 1, 20);
    REQUIRE(env.channel.drain(markers).ok());
  }
  REQUIRE(env.channel.drain(markers).ok());
  env.channel.finish();
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(env.channel.parser().stats().skipped == 0);

  std::vector<std::string> kinds;
  for (const Marker& m : markers) {
    kinds.push_back(kind_name(m.data));
    CHECK(m.pid == child);
    CHECK(m.tid == child);  // the main thread's native id is the pid
  }
  CHECK(kinds == std::vector<std::string>{"hello", "mode", "sb", "ph", "se", "sb", "ph", "se", "sb", "ph",
                                          "se", "close"});
  auto timeline = build_step_timeline(markers);
  const ProcessTimeline* p = timeline.find(child);
  REQUIRE(p);
  REQUIRE(p->steps.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(p->steps[i].step == static_cast<int64_t>(i));
    CHECK(p->steps[i].begin_ns <= *p->steps[i].forward_pass_end_ns);
    CHECK(*p->steps[i].forward_pass_end_ns <= p->steps[i].end_ns);
  }
}
