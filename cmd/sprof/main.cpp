// sprof: the command line over libsprof. Parses flags, runs one subcommand, and
// is the one place that turns library errors into messages and exit codes.

#include <algorithm>
#include <unistd.h>

#include <exception>

#include <spdlog/spdlog.h>

#include "command.hpp"
#include "exit_codes.hpp"
#include "sprof/logging.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/version.hpp"

namespace sprof::cli {
namespace {

GlobalOptions g_options;

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
    case ErrorKind::bad_input:
      return kExitUsage;
    case ErrorKind::io:
    case ErrorKind::permission:
    case ErrorKind::not_python:
    case ErrorKind::unsupported:
    case ErrorKind::runtime:
      return kExitRuntime;
  }
  return kExitRuntime;
}

int run(int argc, char** argv) {
  CLI::App app{"sprof: a sampling profiler for Python training jobs, in the on-disk layout of "
               "SageMaker Debugger's profiler"};
  app.name("sprof");
  app.set_version_flag("-V,--version", std::string("sprof ") + kVersion);
  app.add_flag("-v,--verbose", g_options.verbose, "More log output on stderr (repeatable)");
  app.add_flag("-q,--quiet", g_options.quiet, "Only errors on stderr; no progress line");
  app.add_option("--color", g_options.color, "Colour output: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_flag("--sprof-frames", g_options.sprof_frames,
               "Keep sprof's own Python frames (its bootstrap) in stacks, tables and exports; for "
               "debugging sprof itself");
  app.add_option("--endpoint-url", g_options.s3.endpoint_url,
                 "S3-compatible endpoint for s3:// profiles (default: AWS_ENDPOINT_URL, the AWS config, or AWS's "
                 "regional endpoint)");
  app.add_option("--cache-dir", g_options.s3.cache_dir,
                 "Where objects of s3:// profiles are cached (default: $XDG_CACHE_HOME/sprof, ~/.cache/sprof)");
  app.add_option("--retries", g_options.s3.retries,
                 "Attempts after the first for S3 requests that failed with 5xx, a timeout or a reset connection")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  app.add_option("--s3-timeout", g_options.s3.timeout_s,
                 "An S3 transfer that moves no byte for this many seconds fails (and is retried)")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  app.require_subcommand(1);
  app.fallthrough();

  CommandList commands;
  add_all_commands(app, commands);

  try {
    // Everything after the first "--" is the command to run (record, top), whatever it holds:
    // CLI11 lets an option that takes values end at "--" and parses what follows as options.
    std::vector<std::string> args(argv + 1, argv + argc);
    if (std::string unknown = unknown_subcommand_message(app, args); !unknown.empty()) {
      fmt::print(stderr, "sprof: {}\n", unknown);
      return kExitUsage;
    }
    // record/top: where a command given without "--" starts, else at the first "--".
    auto command = args.begin() + static_cast<long>(command_start(app, args));
    if (command == args.end()) {
      command = std::find(args.begin(), args.end(), "--");
      if (command != args.end()) command = args.erase(command);
    }
    g_options.command.assign(command, args.end());
    args.erase(command, args.end());
    std::reverse(args.begin(), args.end());  // CLI11 takes them reversed
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    std::string message = unknown_options_message(app);
    if (message.empty()) {
      app.exit(e);
    } else {
      fmt::print(stderr, "{}\n", message);
    }
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints CLI11's message and a hint to --help
    return kExitUsage;
  }

  g_options.color_enabled = color_wanted(g_options.color, STDOUT_FILENO);
  configure_logging(g_options.verbose, g_options.quiet, color_wanted(g_options.color, STDERR_FILENO));
  store::set_show_sprof_frames(g_options.sprof_frames);
  for (const auto& command : commands) {
    if (!command.app->parsed()) continue;
    Status opened = open_profile_arguments(*command.app);
    Result<int> result = opened.ok() ? command.run() : Result<int>(opened.error());
    remote::TransferStats s3 = profile_transfers(*command.app);
    if (s3.requests > 0) {
      spdlog::debug("S3: {} requests ({} retries), {} bytes down", s3.requests, s3.retries, s3.bytes_down);
    }
    if (result.ok()) return result.value();
    const Error& error = result.error();
    spdlog::error("{}", error.message);
    return exit_code_for(error.kind);
  }
  spdlog::error("no subcommand given; see sprof --help");
  return kExitUsage;
}

}  // namespace
const GlobalOptions& global_options() { return g_options; }
bool progress_shown() { return !g_options.quiet && isatty(STDERR_FILENO) != 0; }

remote::S3Options s3_options() {
  remote::S3Options o = g_options.s3;
  o.progress = progress_shown();
  return o;
}
}  // namespace sprof::cli

int main(int argc, char** argv) {
  try {
    return sprof::cli::run(argc, argv);
  } catch (const std::exception& e) {
    // A bug, not a user error: say so rather than abort with a core dump.
    fmt::print(stderr, "sprof: internal error: {}\n", e.what());
    return sprof::kExitRuntime;
  }
}
