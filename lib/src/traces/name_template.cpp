// Composer's trace name templates (Python format strings over its variables) and the rank
// variables torchrun puts in each process's environment.

#include <charconv>
#include <variant>

#include <fmt/format.h>

#include "launch/proc.hpp"
#include "sprof/trace_windows.hpp"

namespace sprof::traces {
namespace {

using Value = std::variant<int64_t, std::string>;

std::optional<Value> lookup(const TraceVariables& v, std::string_view name) {
  if (name == "run_name") return Value(v.run_name);
  if (name == "rank") return Value(v.rank);
  if (name == "local_rank") return Value(v.local_rank);
  if (name == "world_size") return Value(v.world_size);
  if (name == "local_world_size") return Value(v.local_world_size);
  if (name == "node_rank") return Value(v.node_rank);
  if (name == "epoch") return Value(v.epoch);
  if (name == "batch") return Value(v.batch);
  if (name == "batch_in_epoch") return Value(v.batch_in_epoch);
  if (name == "step") return Value(v.step);
  if (name == "mode") return Value(v.mode);
  if (name == "pid") return Value(v.pid);
  return std::nullopt;
}

constexpr const char* kVariableList =
    "run_name, rank, local_rank, world_size, local_world_size, node_rank, epoch, batch, batch_in_epoch, step, mode, "
    "pid";

// fmt's format spec grammar is Python's for integers and strings, except for the 'n' and '%'
// types, which fmt refuses (a format_error, turned into a usage error at parse time).
std::string format_value(const Value& value, const std::string& spec) {
  std::string pattern = spec.empty() ? "{}" : "{:" + spec + "}";
  return std::visit([&](const auto& v) { return fmt::vformat(pattern, fmt::make_format_args(v)); }, value);
}

// A variable's text as one path component: values come from the environment and the job (a
// run name "../../evil"), so they can neither climb out of the folder nor carry a NUL or a
// control character; '/' and those become '_', and "." or ".." is "_".
std::string component(std::string text) {
  for (char& c : text) {
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '_';
  }
  if (text == "." || text == "..") text = "_";
  return text;
}

// Widths and precisions over this are refused: {batch:>1000000000} took 5 s and 2 GB to check.
constexpr int64_t kMaxWidth = 255;

std::optional<std::string> spec_problem(std::string_view spec) {
  for (size_t i = 0; i < spec.size();) {
    if (spec[i] < '0' || spec[i] > '9') {
      ++i;
      continue;
    }
    int64_t n = 0;
    for (; i < spec.size() && spec[i] >= '0' && spec[i] <= '9'; ++i) n = std::min<int64_t>(n * 10 + (spec[i] - '0'), 1'000'000);
    if (n > kMaxWidth) return fmt::format("a width or precision over {}", kMaxWidth);
  }
  if (!spec.empty() && spec.back() == 'c') return std::string("the 'c' type (a character code: not a name)");
  return std::nullopt;
}

}  // namespace

Result<NameTemplate> NameTemplate::parse(std::string_view text, std::string_view what) {
  NameTemplate t;
  t.text_ = std::string(text);
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        literal += '}';
        ++i;
        continue;
      }
      return make_error(ErrorKind::usage, "{} '{}': a single '}}' (write '}}}}' for a brace)", what, text);
    }
    if (c != '{') {
      literal += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      literal += '{';
      ++i;
      continue;
    }
    size_t close = text.find('}', i);
    if (close == std::string_view::npos) {
      return make_error(ErrorKind::usage, "{} '{}': '{{' without a closing '}}'", what, text);
    }
    std::string_view field = text.substr(i + 1, close - i - 1);
    size_t colon = field.find(':');
    Piece piece;
    piece.variable = std::string(field.substr(0, colon));
    if (colon != std::string_view::npos) piece.spec = std::string(field.substr(colon + 1));
    std::optional<Value> sample = lookup(TraceVariables{}, piece.variable);
    if (!sample) {
      return make_error(ErrorKind::usage, "{} '{}': unknown variable {{{}}} (known: {})", what, text, piece.variable,
                        kVariableList);
    }
    if (auto problem = spec_problem(piece.spec)) {
      return make_error(ErrorKind::usage, "{} '{}': bad format spec '{}' for {{{}}}: {}", what, text, piece.spec,
                        piece.variable, *problem);
    }
    try {
      (void)format_value(*sample, piece.spec);
    } catch (const fmt::format_error& e) {
      return make_error(ErrorKind::usage, "{} '{}': bad format spec '{}' for {{{}}}: {}", what, text, piece.spec,
                        piece.variable, e.what());
    }
    if (!literal.empty()) t.pieces_.push_back(Piece{std::move(literal), {}, {}});
    literal.clear();
    t.pieces_.push_back(std::move(piece));
    i = close;
  }
  if (!literal.empty()) t.pieces_.push_back(Piece{std::move(literal), {}, {}});
  return t;
}

std::string NameTemplate::expand(const TraceVariables& vars) const {
  std::string out;
  for (const Piece& p : pieces_) {
    if (p.variable.empty()) {
      out += p.literal;
      continue;
    }
    try {
      out += component(format_value(*lookup(vars, p.variable), p.spec));
    } catch (const fmt::format_error&) {
      out += component(format_value(*lookup(vars, p.variable), ""));  // checked at parse time; a value-dependent failure
    }
  }
  return out;
}

void ranks_from_environment(const std::map<std::string, std::string>& env, TraceVariables& vars) {
  auto number = [&env](const char* name, int64_t& field) {
    auto it = env.find(name);
    if (it == env.end()) return false;
    int64_t value = 0;
    const std::string& s = it->second;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || value < 0) return false;
    field = value;
    return true;
  };
  number("RANK", vars.rank);
  number("LOCAL_RANK", vars.local_rank);
  number("WORLD_SIZE", vars.world_size);
  number("LOCAL_WORLD_SIZE", vars.local_world_size);
  if (!number("NODE_RANK", vars.node_rank)) number("GROUP_RANK", vars.node_rank);
}

std::map<std::string, std::string> rank_environment(pid_t pid) {
  std::map<std::string, std::string> env;
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK"}) {
    if (auto value = launch::environment_variable(pid, name)) env.emplace(name, *value);
  }
  return env;
}

}  // namespace sprof::traces
