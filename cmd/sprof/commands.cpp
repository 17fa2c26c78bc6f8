#include "command.hpp"

namespace sprof::cli {

void accept_command(CLI::App* sub) {
  sub->footer("The command comes after -- or after sprof's options: everything from its first word on is the "
              "command's.");
}

namespace {

// Whether args[i] is an option of `app` (or of its parent, for fallthrough) that takes a value
// in the next argument.
bool takes_next_value(const CLI::App& app, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;  // --name=value
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    const CLI::Option* option = a->get_option_no_throw(arg);
    if (option != nullptr) return option->get_expected_min() > 0;
  }
  return false;
}

}  // namespace

size_t command_start(const CLI::App& app, const std::vector<std::string>& args) {
  size_t i = 0;
  // The subcommand: the first word that is not a global option's value.
  const CLI::App* sub = nullptr;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") return args.size();
    if (args[i].size() > 1 && args[i][0] == '-') {
      if (takes_next_value(app, args[i])) ++i;
      continue;
    }
    auto found = app.get_subcommands([&](const CLI::App* a) { return a->check_name(args[i]); });
    if (!found.empty()) sub = found.front();
    break;
  }
  if (sub == nullptr || (sub->get_name() != "record" && sub->get_name() != "top")) return args.size();
  for (++i; i < args.size(); ++i) {
    if (args[i] == "--") return args.size();
    if (args[i].size() > 1 && args[i][0] == '-') {
      if (takes_next_value(*sub, args[i])) ++i;
      continue;
    }
    return i;
  }
  return args.size();
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
  add_upload(app, commands);
  add_top(app, commands);
  add_sysmon(app, commands);
  add_stats_dirs(app, commands);
}

}  // namespace sprof::cli
