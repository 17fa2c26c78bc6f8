#include "command.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sprof/closest_name.hpp"

namespace sprof::cli {

void accept_command(CLI::App* sub) {
  sub->footer("The command comes after -- or after sprof's options: everything from its first word on is the "
              "command's.");
}

namespace {

// Whether `arg` is an option of `app` (or of its parent, for fallthrough) that takes a value
// in the next argument.
bool takes_next_value(const CLI::App& app, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;  // --name=value
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    const CLI::Option* option = a->get_option_no_throw(arg);
    if (option != nullptr) return option->get_expected_min() > 0;
  }
  return false;
}

// The index of the first word from `from` on that is neither an option of `app` nor an option's
// value; args.size() when there is none before the end or a "--".
size_t first_word(const CLI::App& app, const std::vector<std::string>& args, size_t from) {
  for (size_t i = from; i < args.size(); ++i) {
    if (args[i] == "--") return args.size();
    if (args[i].size() > 1 && args[i][0] == '-') {
      if (takes_next_value(app, args[i])) ++i;
      continue;
    }
    return i;
  }
  return args.size();
}

const CLI::App* subcommand_named(const CLI::App& app, const std::string& word) {
  auto found = app.get_subcommands([&](const CLI::App* a) { return a->check_name(word); });
  return found.empty() ? nullptr : found.front();
}

}  // namespace

namespace {
// The profile arguments every subcommand declared, with the option that fills each.
struct DeclaredProfileArgument {
  const CLI::App* sub;
  const CLI::Option* option;
  ProfileArgument* argument;
};
std::vector<DeclaredProfileArgument>& profile_arguments() {
  static std::vector<DeclaredProfileArgument> arguments;
  return arguments;
}
}  // namespace

CLI::Option* add_profile_argument(CLI::App* sub, const std::string& name, ProfileArgument& value, const std::string& help) {
  CLI::Option* option = sub->add_option(name, value.text, help);
  profile_arguments().push_back({sub, option, &value});
  return option;
}

Status open_profile_arguments(const CLI::App& sub) {
  for (const auto& [declared_in, option, argument] : profile_arguments()) {
    if (declared_in != &sub || option->count() == 0) continue;
    SPROF_TRY(static_cast<remote::NamedProfile&>(*argument), remote::open_named_profile(argument->text, s3_options()));
  }
  return {};
}

remote::TransferStats profile_transfers(const CLI::App& sub) {
  remote::TransferStats total;
  for (const auto& [declared_in, option, argument] : profile_arguments()) {
    if (declared_in == &sub && argument->s3) total += argument->s3->stats();
  }
  return total;
}

size_t command_start(const CLI::App& app, const std::vector<std::string>& args) {
  size_t at = first_word(app, args, 0);  // the subcommand
  const CLI::App* sub = at < args.size() ? subcommand_named(app, args[at]) : nullptr;
  if (sub == nullptr || (sub->get_name() != "record" && sub->get_name() != "top")) return args.size();
  return first_word(*sub, args, at + 1);
}

namespace {

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
      for (const auto& n : o->get_snames()) names.push_back("-" + n);
    }
  }
  return names;
}

}  // namespace

std::string unknown_subcommand_message(const CLI::App& app, const std::vector<std::string>& args) {
  size_t at = first_word(app, args, 0);
  if (at == args.size() || subcommand_named(app, args[at]) != nullptr) return "";
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  std::string near = closest_name(args[at], names);
  return fmt::format("'{}' is not a sprof command{}; see sprof --help", args[at],
                     near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near));
}

std::string unknown_options_message(const CLI::App& app) {
  auto parsed = app.get_subcommands();
  const CLI::App& where = parsed.empty() ? app : *parsed.front();
  std::vector<std::string> known = option_names(where);
  std::vector<std::string> parts;
  for (const CLI::App* a = &where; a != nullptr; a = a->get_parent()) {
    for (const std::string& extra : a->remaining()) {
      if (extra.size() < 2 || extra[0] != '-') {
        parts.push_back(fmt::format("unexpected argument '{}'", extra));
        continue;
      }
      std::string name = extra.substr(0, extra.find('='));
      std::string near = closest_name(name, known);
      parts.push_back(fmt::format("unknown option {}{}", name, near.empty() ? "" : fmt::format(" (did you mean {}?)", near)));
    }
  }
  if (parts.empty()) return "";
  std::string who = parsed.empty() ? "sprof" : "sprof " + parsed.front()->get_name();
  return fmt::format("{}: {}; see {} --help", who, fmt::join(parts, "; "), who);
}

// Registration order is the order --help lists them in.
void add_all_commands(CLI::App& app, CommandList& commands) {
  add_record(app, commands);
  add_list_stats(app, commands);
  add_nodes(app, commands);
  add_selection_commands(app, commands);  // fetch-by-step ... post-hook-close
  add_by_phase(app, commands);
  add_export(app, commands);
  add_dump(app, commands);
  add_rules(app, commands);
  add_analyze(app, commands);
  add_markers(app, commands);
  add_gpu(app, commands);
  add_diff(app, commands);
  add_upload(app, commands);
  add_top(app, commands);
  add_sysmon(app, commands);
  add_stats_dirs(app, commands);
}

}  // namespace sprof::cli
