#include "output_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "sprof/json_output.hpp"
#include "sprof/version.hpp"

namespace sprof::cli {

OutputFormat FormatOptions::resolved() const {
  if (json) return OutputFormat::json;
  if (format == "json") return OutputFormat::json;
  if (format == "csv") return OutputFormat::csv;
  return OutputFormat::table;
}

bool FormatOptions::given() const {
  return (format_option != nullptr && format_option->count() > 0) ||
         (json_option != nullptr && json_option->count() > 0);
}

void add_format_options(CLI::App* app, FormatOptions& options, const std::vector<std::string>& extra) {
  std::vector<std::string> formats{"table", "json", "csv"};
  formats.insert(formats.end(), extra.begin(), extra.end());
  std::string help = "Output format: table, json";
  for (const auto& f : extra) help += ", " + f;
  help += " or csv";
  options.format_option = app->add_option("-f,--format", options.format, help)
                              ->check(CLI::IsMember(formats))
                              ->capture_default_str();
  options.json_option = app->add_flag("--json", options.json, "Short for --format json");
  options.json_option->excludes(options.format_option);
}

void print_answer(const FormatOptions& format, std::string_view command, const Answer& answer) {
  std::string text;
  switch (format.resolved()) {
    case OutputFormat::json: {
      Json doc;
      doc["schema_version"] = kJsonSchemaVersion;
      doc["sprof_version"] = kVersion;
      doc["command"] = command;
      answer.json(doc);
      // What doc.dump(2, ' ', false, replace) writes (invalid UTF-8 in file names replaced, not an
      // abort), faster.
      write_json_text(stdout, doc, kAnswerJsonIndent);
      return;
    }
    case OutputFormat::csv: text = answer.csv(); break;
    case OutputFormat::table: text = answer.table(); break;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void add_function_table_options(CLI::App* app, render::FunctionOrder& order) {
  app->add_option("--sort", order.sort, "Order functions by tottime, cumtime, ncalls or pcalls (descending)")
      ->check(CLI::IsMember({"tottime", "cumtime", "ncalls", "pcalls"}))
      ->capture_default_str();
  app->add_option("-l,--limit", order.limit, "Show only the first N functions (0: all)")->capture_default_str();
}

size_t terminal_width() {
  if (isatty(STDOUT_FILENO) == 0) return 0;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

}  // namespace sprof::cli
