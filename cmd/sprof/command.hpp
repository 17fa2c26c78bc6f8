#pragma once
// Every subcommand lives in its own file and registers itself through one
// add_<name>() function listed in commands.cpp. Parsing fills the command's
// options; main() then calls run() of the one subcommand that was parsed.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sprof/result.hpp"
#include "sprof/s3.hpp"

namespace sprof::cli {

struct GlobalOptions {
  int verbose = 0;      // -v, repeatable
  bool quiet = false;   // -q
  bool sprof_frames = false;   // --sprof-frames: keep sprof's own frames in what samples show
  std::string color = "auto";  // --color auto|always|never (NO_COLOR honoured for auto)
  bool color_enabled = false;  // resolved after parsing
  // Profiles on S3 (s3://bucket/prefix wherever a profile directory is taken): --endpoint-url,
  // --cache-dir, --retries, --s3-timeout.
  remote::S3Options s3;
  std::vector<std::string> command;  // what followed the first "--" (record's and top's command)
};

// The S3 options the global flags give (endpoint, cache, retries; a progress line on a terminal).
remote::S3Options s3_options();

struct Command {
  CLI::App* app = nullptr;
  // Returns the process exit code on success; an Error is mapped to its exit code in main.cpp.
  std::function<Result<int>()> run;
};

using CommandList = std::vector<Command>;

const GlobalOptions& global_options();
// Whether progress lines are drawn: stderr is a terminal and -q was not given.
bool progress_shown();

// A positional argument that names a profile: a directory (or trace file), or s3://bucket/prefix.
// main() opens each one given before the command runs (an S3 prefix is listed, sprof/s3.hpp);
// the command reads the profile through `where` and names it by `text`.
struct ProfileArgument : remote::NamedProfile {
  std::string text;
  bool empty() const { return text.empty(); }
};
CLI::Option* add_profile_argument(CLI::App* sub, const std::string& name, ProfileArgument& value, const std::string& help);
// Opens the profile arguments `sub` was given (main(), before the command runs).
Status open_profile_arguments(const CLI::App& sub);
// What reading `sub`'s S3 profiles transferred (for -v).
remote::TransferStats profile_transfers(const CLI::App& sub);

// Record's and top's command: what follows "--"; main() puts the "--" a user left out before the
// first word that is not one of sprof's options or their values (`sprof record python3 train.py
// -d 5` runs train.py with -d 5), so the command's own flags are never sprof's.
void accept_command(CLI::App* sub);
// Where that "--" goes in `args` (forward order), or args.size() when none is needed.
size_t command_start(const CLI::App& app, const std::vector<std::string>& args);

// Usage messages with a suggestion, for a first word that names no subcommand ("" when it names
// one, or there is none) and for options a subcommand does not know (CLI11's ExtrasError).
std::string unknown_subcommand_message(const CLI::App& app, const std::vector<std::string>& args);
std::string unknown_options_message(const CLI::App& app);

// commands.cpp: the one list of subcommands.
void add_all_commands(CLI::App& app, CommandList& commands);

void add_record(CLI::App& app, CommandList& commands);
void add_export(CLI::App& app, CommandList& commands);
void add_dump(CLI::App& app, CommandList& commands);
void add_rules(CLI::App& app, CommandList& commands);
// One per subcommand file.
void add_list_stats(CLI::App& app, CommandList& commands);
void add_nodes(CLI::App& app, CommandList& commands);
// fetch-by-step, fetch-by-time, between-modes, pre-step-zero, post-hook-close.
void add_selection_commands(CLI::App& app, CommandList& commands);
void add_by_phase(CLI::App& app, CommandList& commands);
void add_sysmon(CLI::App& app, CommandList& commands);
void add_stats_dirs(CLI::App& app, CommandList& commands);
void add_analyze(CLI::App& app, CommandList& commands);
void add_markers(CLI::App& app, CommandList& commands);
void add_gpu(CLI::App& app, CommandList& commands);
void add_diff(CLI::App& app, CommandList& commands);
void add_upload(CLI::App& app, CommandList& commands);
void add_top(CLI::App& app, CommandList& commands);

}  // namespace sprof::cli
