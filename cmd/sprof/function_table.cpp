#include "function_table.hpp"

namespace sprof::cli {

void add_function_table_options(CLI::App* app, FunctionTableOptions& options) {
  app->add_option("--sort", options.sort,
                  "Order functions by tottime, cumtime, ncalls or pcalls (descending)")
      ->check(CLI::IsMember({"tottime", "cumtime", "ncalls", "pcalls"}))
      ->capture_default_str();
  app->add_option("-l,--limit", options.limit, "Show only the first N functions (0: all)")
      ->capture_default_str();
}

}  // namespace sprof::cli
