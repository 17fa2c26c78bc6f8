// sprof export: a profile directory's raw samples as collapsed stacks or speedscope JSON.

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "sprof/profile_samples.hpp"
#include "sprof/sample_report.hpp"

namespace sprof::cli {
namespace {

struct ExportFlags {
  std::string dir;
  std::string format;
  std::string output = "-";
  int pid = 0;
  bool idle = false;
  bool gil = false;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<std::string> format_for(const ExportFlags& flags) {
  if (!flags.format.empty()) return flags.format == "raw" ? std::string("collapsed") : flags.format;
  const std::string& o = flags.output;
  if (ends_with(o, ".speedscope.json")) return std::string("speedscope");
  if (ends_with(o, ".folded") || ends_with(o, ".collapsed") || ends_with(o, ".txt")) return std::string("collapsed");
  return make_error(ErrorKind::usage, "export: give -f collapsed or -f speedscope{}",
                    o == "-" ? "" : fmt::format(" (cannot tell from the name {})", o));
}

}  // namespace

void add_export(CLI::App& app, CommandList& commands) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* sub = app.add_subcommand("export", "Write a profile's samples as collapsed stacks or speedscope JSON");
  sub->add_option("dir", flags->dir, "Profile directory written by sprof record")->required();
  sub->add_option("-f,--format", flags->format,
                  "collapsed (alias raw: flamegraph.pl's folded stacks) or speedscope; "
                  "inferred from -o's name (.folded/.collapsed/.txt, .speedscope.json)")
      ->check(CLI::IsMember({"collapsed", "raw", "speedscope"}));
  sub->add_option("-o,--output", flags->output, "Output file (default: standard output)");
  sub->add_option("--pid", flags->pid, "Only this process")->check(CLI::PositiveNumber);
  sub->add_flag("--idle", flags->idle, "Include idle samples");
  sub->add_flag("--gil", flags->gil, "Only samples of threads holding the GIL");

  commands.push_back({sub, [flags]() -> Result<int> {
    SPROF_TRY(std::string format, format_for(*flags));
    SPROF_TRY(store::ProfileSamples profile, store::load_profile_samples(flags->dir));
    query::SampleFilter filter;
    filter.include_idle = flags->idle;
    filter.gil_only = flags->gil;
    if (flags->pid != 0) {
      filter.pid = flags->pid;
      bool known = std::any_of(profile.processes.begin(), profile.processes.end(),
                               [&](const auto& p) { return p.log.pid() == flags->pid; });
      if (!known) return make_error(ErrorKind::usage, "--pid {}: no samples of that process in {}", flags->pid, flags->dir);
    }
    std::string text;
    uint64_t samples = format == "speedscope" ? report::write_speedscope(profile, filter, text)
                                              : report::write_collapsed(profile, filter, text);
    if (samples == 0) spdlog::warn("no samples matched (idle samples need --idle)");
    if (flags->output == "-") {
      fmt::print("{}", text);
      std::fflush(stdout);
      return 0;
    }
    std::ofstream out(flags->output, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return make_error(ErrorKind::io, "cannot write {}", flags->output);
    if (!global_options().quiet) fmt::print(stderr, "sprof: wrote {} ({} samples)\n", flags->output, samples);
    return 0;
  }});
}

}  // namespace sprof::cli
