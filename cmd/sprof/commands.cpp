#include "command.hpp"

namespace sprof::cli {

// Registration order is the order --help lists them in.
void add_all_commands(CLI::App& app, CommandList& commands) {
  add_record(app, commands);
  add_export(app, commands);
  add_dump(app, commands);
  add_rules(app, commands);
}

}  // namespace sprof::cli
