// Writing the bootstrap's Python files and computing the target's environment.

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>

#include "launch/proc.hpp"
#include "sprof/bootstrap.hpp"
#include "sprof/profile_samples.hpp"

namespace sprof::bootstrap {
namespace fs = std::filesystem;

Status write_python_files(const fs::path& dir, bool package_only) {
  for (const EmbeddedFile& file : python_files()) {
    if (package_only && !file.path.starts_with("sprof/")) continue;
    fs::path target = dir / fs::path(std::string(file.path));
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      return make_error(ErrorKind::io, "cannot create {}: {}", target.parent_path().string(), ec.message());
    }
    // Through a temporary and rename: a target still running from an earlier write keeps the old
    // file whole.
    fs::path temporary = target;
    temporary += fmt::format(".tmp{}", ::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(file.content.data(), static_cast<std::streamsize>(file.content.size()));
      out.close();
      if (!out) {
        fs::remove(temporary, ec);
        return make_error(ErrorKind::io, "cannot write {}", temporary.string());
      }
    }
    fs::rename(temporary, target, ec);
    if (ec) {
      fs::remove(temporary, ec);
      return make_error(ErrorKind::io, "cannot write {}: {}", target.string(), ec.message());
    }
  }
  return {};
}

std::vector<std::string> BootstrapEnv::environment(char* const* base) const {
  std::vector<std::string> out;
  for (char* const* entry = base; entry && *entry; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [variable, value] : variables) {
      if (name == variable) replaced = true;
    }
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [variable, value] : variables) out.push_back(variable + "=" + value);
  return out;
}

std::vector<std::pair<std::string, std::string>> cprofile_environment(const CprofileOptions& options) {
  std::error_code ec;
  fs::path dir = fs::absolute(options.profile_dir, ec);
  if (ec) dir = options.profile_dir;
  return {
      {kEnvPythonProfiler, "cprofile"},
      {kEnvProfileDir, dir.lexically_normal().string()},
      {kEnvNodeHost, options.node_host.empty() ? launch::node_host() : options.node_host},
      {kEnvCprofileTimer, window::to_string(options.timer)},
      {kEnvWindow, options.window.spec()},
  };
}

Result<BootstrapEnv> prepare(const fs::path& dir, const PrepareOptions& options) {
  std::error_code ec;
  fs::path absolute = fs::absolute(dir, ec);
  if (ec) return make_error(ErrorKind::io, "bootstrap directory {}: {}", dir.string(), ec.message());
  absolute = absolute.lexically_normal();
  if (absolute.string().find(':') != std::string::npos) {
    // PYTHONPATH separates entries with ':'; such a directory cannot be put on it.
    return make_error(ErrorKind::usage, "bootstrap directory {} contains ':', which PYTHONPATH cannot hold",
                      absolute.string());
  }
  SPROF_TRY_STATUS(write_python_files(absolute));
  SPROF_TRY(MarkerChannel channel, MarkerChannel::open());

  std::string pythonpath = absolute.string();
  std::string inherited;
  if (options.pythonpath) {
    inherited = *options.pythonpath;
  } else if (const char* current = std::getenv("PYTHONPATH")) {
    inherited = current;
  }
  // An empty PYTHONPATH adds nothing; appending ":" to ours would add the current directory.
  if (!inherited.empty()) pythonpath += ":" + inherited;

  BootstrapEnv env{absolute, std::move(channel), {}};
  env.variables = {
      {"PYTHONPATH", pythonpath},
      {kEnvMarkerFd, std::to_string(env.channel.write_fd())},
      {kEnvMarkerInode, std::to_string(env.channel.inode())},
      {kEnvMarkerPath, env.channel.proc_path()},
      {kEnvTorch, options.torch ? "1" : "0"},
  };
  if (!options.step_functions.empty()) {
    std::string names;
    for (const auto& name : options.step_functions) names += (names.empty() ? "" : ",") + name;
    env.variables.emplace_back(kEnvStepFn, names);
    env.variables.emplace_back(kEnvStepFnMode, options.step_fn_mode);
  }
  // --sprof-frames: deterministic mode keeps sprof's functions in its stats too.
  if (store::show_sprof_frames()) env.variables.emplace_back("SPROF_SPROF_FRAMES", "1");
  if (options.cprofile) {
    for (auto& variable : cprofile_environment(*options.cprofile)) env.variables.push_back(std::move(variable));
  }
  return env;
}

}  // namespace sprof::bootstrap
