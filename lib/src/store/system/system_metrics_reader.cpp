// Reader of smdebug's system-metrics JSON lines, and their file names (see sprof/system_metrics.hpp);
// system_metrics_writer.cpp writes them.

#include "sprof/layout.hpp"
#include "sprof/profile_files.hpp"
#include "sprof/system_metrics.hpp"

#include <algorithm>
#include <regex>
#include <system_error>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/json_text.hpp"

namespace fs = std::filesystem;

namespace sprof::store {

int64_t to_nanoseconds(double t, TimeUnit unit) {
  // Same operations, in the same order, as smdebug's convert_utc_timestamp_to_nanoseconds, so
  // boundary samples fall on the same side as in smdebug's tests.
  switch (unit) {
    case TimeUnit::seconds: return static_cast<int64_t>(t * 1000 * 1000 * 1000);
    case TimeUnit::milliseconds: return static_cast<int64_t>(t * 1000 * 1000);
    case TimeUnit::microseconds: return static_cast<int64_t>(t * 1000);
    case TimeUnit::nanoseconds: return static_cast<int64_t>(t);
  }
  return static_cast<int64_t>(t);
}

std::optional<SystemFileName> parse_system_file_name(const fs::path& path) {
  static const std::regex pattern(R"(.+/system/.+/(\d{10})\.(algo-\d+)\.json)");
  std::error_code ec;
  fs::path absolute = path.is_absolute() ? path : fs::absolute(path, ec);
  std::smatch match;
  std::string text = absolute.generic_string();
  if (!std::regex_match(text, match, pattern)) return std::nullopt;
  return SystemFileName{std::stoll(match[1].str()), match[2].str()};
}

int64_t to_microseconds(double t, TimeUnit unit) {
  switch (unit) {
    case TimeUnit::seconds: return static_cast<int64_t>(t * 1000 * 1000);
    case TimeUnit::milliseconds: return static_cast<int64_t>(t * 1000);
    case TimeUnit::microseconds: return static_cast<int64_t>(t);
    case TimeUnit::nanoseconds: return static_cast<int64_t>(t / 1000);
  }
  return static_cast<int64_t>(t);
}

fs::path system_file_path(const fs::path& profile_dir, int64_t minute_epoch_s, std::string_view node_id) {
  return profile_dir / kSystemDir / kSystemMetricsDir / utc_date_hour(minute_epoch_s) /
         fmt::format("{}.{}.json", minute_epoch_s, node_id);
}

namespace {

// Parses one record; returns an explanation when the line is not a record smdebug would accept.
std::optional<std::string> parse_record(std::string_view line, SystemMetric& out) {
  if (!json_depth_within(line)) return fmt::format("nested deeper than {} levels", kMaxJsonDepth);
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return "not valid JSON";
  if (!j.is_object()) return "not a JSON object";
  auto string_field = [&](const char* key, std::string& dest, bool required) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) return fmt::format("missing \"{}\"", key);
      dest.clear();
      return std::nullopt;
    }
    if (!it->is_string()) return fmt::format("\"{}\" is not a string", key);
    dest = it->get<std::string>();
    return std::nullopt;
  };
  auto number_field = [&](const char* key, double& dest) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end()) return fmt::format("missing \"{}\"", key);
    if (!it->is_number()) return fmt::format("\"{}\" is not a number", key);
    dest = it->get<double>();
    return std::nullopt;
  };
  if (auto e = string_field("Type", out.type, true)) return e;
  if (auto e = string_field("Name", out.name, false)) return e;
  if (auto e = string_field("Dimension", out.dimension, true)) return e;
  if (auto e = number_field("Value", out.value)) return e;
  if (auto e = string_field("NodeId", out.node_id, true)) return e;
  if (auto e = number_field("Timestamp", out.timestamp)) return e;
  return std::nullopt;
}

}  // namespace

Result<std::vector<SystemMetric>> parse_system_metrics(std::string_view text, const std::string& source) {
  // Lines as Python's readline sees them: a final line without '\n' is still a line.
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(pos));
      break;
    }
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::vector<SystemMetric> metrics;
  metrics.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    SystemMetric metric;
    if (auto problem = parse_record(lines[i], metric)) {
      if (i + 1 == lines.size()) {
        spdlog::debug("{}: skipping incomplete last line {} ({})", source, i + 1, *problem);
        break;
      }
      return make_error(ErrorKind::bad_input, "system metrics file {}: line {} of {} is corrupt ({})", source,
                        i + 1, lines.size(), *problem);
    }
    metrics.push_back(std::move(metric));
  }
  return metrics;
}

Result<std::vector<SystemMetric>> read_system_metrics_file(const fs::path& path, const ProfileFiles& files) {
  SPROF_TRY(std::string text, read_all(files, path));
  return parse_system_metrics(text, path.string());
}

Result<std::vector<SystemMetric>> read_system_metrics(const fs::path& profile_dir, const ProfileFiles& files) {
  fs::path root = profile_dir / kSystemDir;
  SPROF_TRY(auto paths, files_under(files, root));
  std::vector<std::pair<int64_t, fs::path>> minutes;
  for (const fs::path& path : paths) {
    if (auto name = parse_system_file_name(path)) minutes.emplace_back(name->minute_epoch_s, path);
  }
  std::sort(minutes.begin(), minutes.end());
  std::vector<fs::path> wanted;
  for (const auto& f : minutes) wanted.push_back(f.second);
  files.prefetch(wanted);
  std::vector<SystemMetric> all;
  for (const auto& [minute, path] : minutes) {
    SPROF_TRY(auto metrics, read_system_metrics_file(path, files));
    all.insert(all.end(), std::make_move_iterator(metrics.begin()), std::make_move_iterator(metrics.end()));
  }
  return all;
}

std::vector<SystemMetric> filter_system_metrics(const std::vector<SystemMetric>& metrics, double start, double end,
                                                TimeUnit unit, std::string_view type) {
  int64_t start_ns = to_nanoseconds(start, unit);
  int64_t end_ns = to_nanoseconds(end, unit);
  std::vector<SystemMetric> out;
  for (const auto& m : metrics) {
    if (!type.empty() && m.type != type) continue;
    int64_t ts = to_nanoseconds(m.timestamp, TimeUnit::seconds);
    if (start_ns <= ts && ts <= end_ns) out.push_back(m);
  }
  return out;
}

}  // namespace sprof::store
