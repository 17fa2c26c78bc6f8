#include "command.hpp"

namespace sprof::cli {

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
