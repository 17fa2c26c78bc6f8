// record --rule: the rules on the data recorded so far, every interval, with their actions.

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "launch/proc.hpp"
#include "sprof/manifest.hpp"
#include "sprof/open_profile.hpp"
#include "sprof/rule_watch.hpp"
#include "sprof/step_timeline.hpp"
#include "sprof/step_trace.hpp"
#include "sprof/system_metrics.hpp"
#include "sprof/temp_dir.hpp"
#include "sprof/trace_events.hpp"

namespace fs = std::filesystem;

namespace sprof::watch {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The catalogue's spelling of a rule name (a built-in or one of `custom`), or "" when there is none.
std::string canonical(std::string_view name, const rules::CustomRules& custom) {
  for (const auto& info : rules::rule_catalog()) {
    if (lower(info.name) == lower(std::string(name))) return info.name;
  }
  return custom.find(name).value_or("");
}

int64_t epoch_s() { return int64_t(::time(nullptr)); }

// The custom rules watched, with where each comes from.
nlohmann::json custom_names(const rules::CustomRules& custom, const std::vector<std::string>& watched) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& info : custom.catalog()) {
    if (std::find(watched.begin(), watched.end(), info.name) == watched.end()) continue;
    names.push_back({{"name", info.name}, {"source", info.source}});
  }
  return names;
}

}  // namespace

Status parse_rule_flag(std::string_view text, RuleWatchOptions& options) {
  size_t colon = text.find(':');
  std::string name(text.substr(0, colon));
  if (lower(name) == "all") {
    options.rules.push_back("all");
  } else {
    std::string rule = canonical(name, options.custom);
    if (rule.empty()) {
      std::vector<std::string> names;
      for (const auto& info : rules::rule_catalog()) names.push_back(info.name);
      for (const auto& info : options.custom.catalog()) names.push_back(info.name);
      return make_error(ErrorKind::usage, "--rule {}: no such rule (known: all, {})", name, fmt::join(names, ", "));
    }
    options.rules.push_back(rule);
    name = rule;
  }
  if (colon == std::string_view::npos) return {};
  if (options.custom.find(name)) {
    return make_error(ErrorKind::usage, "--rule {}: {} is a custom rule; its parameters are in its rule file or program",
                      text, name);
  }
  std::string_view params = text.substr(colon + 1);
  size_t pos = 0;
  while (pos <= params.size()) {
    size_t comma = params.find(',', pos);
    std::string_view item = params.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? params.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return make_error(ErrorKind::usage, "--rule {}: '{}' is not param=value", text, item);
    }
    options.params.push_back(fmt::format("{}_{}", name == "all" ? std::string("ProfilerReport") : name, item));
  }
  return {};
}

Status parse_action_flag(std::string_view text, RuleWatchOptions& options) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return make_error(ErrorKind::usage, "--action {}: give RULE=stop, RULE=log or RULE=exec:COMMAND", text);
  }
  std::string rule = canonical(text.substr(0, eq), options.custom);
  if (rule.empty()) return make_error(ErrorKind::usage, "--action {}: no such rule '{}'", text, text.substr(0, eq));
  std::string_view what = text.substr(eq + 1);
  RuleAction action;
  if (what == "stop") {
    action.kind = RuleAction::Kind::stop;
  } else if (what == "log") {
    action.kind = RuleAction::Kind::log;
  } else if (what.starts_with("exec:") && what.size() > 5) {
    action.kind = RuleAction::Kind::exec;
    action.command = std::string(what.substr(5));
  } else {
    return make_error(ErrorKind::usage, "--action {}: '{}' is not stop, log or exec:COMMAND", text, what);
  }
  options.actions[rule] = action;
  return {};
}

struct RuleWatch::Impl {
  RuleWatchOptions options;
  rules::RulesOptions rules_options;  // the built-ins
  bool builtins = true;
  std::unique_ptr<rules::CustomRuleRunner> custom;
  std::vector<std::string> watched_custom;
  fs::path dir;
  pid_t target = 0;
  int64_t start_epoch_s = 0;
  int64_t next_eval_ns = 0;

  std::mutex mutex;
  std::condition_variable cv;
  bool evaluate = false;
  bool stopping = false;
  std::thread worker;

  // Worker (then on_finish).
  struct Last {
    rules::RuleStatus status = rules::RuleStatus::no_data;
    int64_t triggered = -1;
    int64_t fired_at = 0;  // the trigger count the action last fired at
  };
  std::map<std::string, Last> last;
  int64_t evaluations = 0;
  int64_t failed_evaluations = 0;
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json stopped_by = nullptr;
  struct Notifier {
    pid_t pid;
    std::string rule;
    std::string command;
  };
  std::vector<Notifier> notifiers;
  std::thread stopper;
  std::vector<rules::RuleResult> final_results;

  // What has been recorded so far, as the rules read a finished profile: the system metrics, and
  // the steps from the markers written as smdebug's step trace into a scratch directory.
  Result<rules::RulesInput> input_so_far() {
    rules::RulesInput input;
    // Opened afresh each time: the recording goes on writing.
    SPROF_TRY(input.profile, query::Profile::open(dir));
    SPROF_TRY(auto system, input.profile->system_metrics());
    input.system = *system;
    SPROF_TRY(const store::Manifest* manifest, input.profile->manifest());
    // No process exits yet: steps still open stay open.
    SPROF_TRY(timeline::StepTimeline steps, timeline::build_profile_timeline(dir, nullptr));
    SPROF_TRY(TempDir scratch, TempDir::create("sprof-rules-"));
    auto written = timeline::write_step_trace(scratch.path(), *manifest, steps);
    auto trace = written.ok() ? store::read_trace_events(scratch.path()) : Result<store::TraceReadResult>(written.error());
    if (!trace.ok()) return std::move(trace).error();
    input.set_framework(std::move(trace->events));
    return input;
  }

  Result<std::vector<rules::RuleResult>> evaluate_rules(const rules::RulesInput& input, bool final) {
    std::vector<rules::RuleResult> results;
    if (builtins) {
      SPROF_TRY(results, rules::run_rules(input, rules_options));
    }
    if (custom) {
      auto more = custom->evaluate(input, final);
      results.insert(results.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    return results;
  }

  void run_once(const rules::RulesInput& input, bool final) {
    auto results = evaluate_rules(input, final);
    if (!results.ok()) {
      ++failed_evaluations;
      spdlog::debug("rules: {}", results.error().message);
      return;
    }
    ++evaluations;
    auto written = rules::write_rule_output(dir, *results, start_epoch_s);
    if (!written.ok()) spdlog::warn("rules: {}", written.error().message);
    for (const rules::RuleResult& r : *results) {
      Last& l = last[r.rule];
      bool changed = r.status != l.status || r.triggered != l.triggered;
      if (changed || final) {
        std::string count = r.status == rules::RuleStatus::issues_found
                                ? fmt::format(", triggered {} time{}", r.triggered, r.triggered == 1 ? "" : "s")
                                : "";
        fmt::print(stderr, "sprof: rule {}: {}{}{}\n", r.rule, rules::to_string(r.status), count,
                   r.evidence.empty() ? "" : ": " + r.evidence);
      }
      l.status = r.status;
      l.triggered = r.triggered;
      if (r.status != rules::RuleStatus::issues_found || r.triggered <= l.fired_at) continue;
      l.fired_at = r.triggered;  // once per new finding, not every interval
      auto action = options.actions.find(r.rule);
      RuleAction a = action == options.actions.end() ? RuleAction{} : action->second;
      events.push_back({{"rule", r.rule},
                        {"status", rules::to_string(r.status)},
                        {"triggered", r.triggered},
                        {"evidence", r.evidence},
                        {"at_epoch_s", epoch_s()},
                        {"action", final                              ? "none: the job had ended"
                                   : a.kind == RuleAction::Kind::stop   ? "stop"
                                   : a.kind == RuleAction::Kind::exec ? "exec"
                                                                      : "log"}});
      if (final) continue;
      if (a.kind == RuleAction::Kind::stop) stop_job(r);
      if (a.kind == RuleAction::Kind::exec) notify(a.command, r);
    }
    if (final) final_results = std::move(results).value();
  }

  void stop_job(const rules::RuleResult& r) {
    if (!stopped_by.is_null() || target <= 0) return;
    stopped_by = {{"rule", r.rule}, {"evidence", r.evidence}, {"triggered", r.triggered}, {"at_epoch_s", epoch_s()}};
    fmt::print(stderr, "sprof: rule {} found issues: stopping the job (SIGINT, SIGTERM after {:.0f} s)\n", r.rule,
               options.stop_grace_s);
    pid_t pid = target;
    double grace = options.stop_grace_s;
    stopper = std::thread([pid, grace] {
      auto wait_gone = [pid](double seconds) {
        for (int i = 0; i < int(seconds * 10); ++i) {
          if (!launch::is_running(pid)) return true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return !launch::is_running(pid);
      };
      ::kill(pid, SIGINT);
      if (wait_gone(grace)) return;
      ::kill(pid, SIGTERM);
      if (wait_gone(grace)) return;
      ::kill(pid, SIGKILL);
    });
  }

  void notify(const std::string& command, const rules::RuleResult& r) {
    pid_t child = ::fork();
    if (child < 0) {
      spdlog::warn("rule {}: cannot run {}: {}", r.rule, command, std::strerror(errno));
      return;
    }
    if (child == 0) {
      ::setpgid(0, 0);  // a group of its own: what it starts ends with it (finish_notifiers)
      // The recorder blocks the termination signals in its threads; the notifier must not inherit that.
      sigset_t none;
      ::sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setenv("SPROF_RULE", r.rule.c_str(), 1);
      ::setenv("SPROF_RULE_STATUS", rules::to_string(r.status), 1);
      ::setenv("SPROF_RULE_TRIGGERED", std::to_string(r.triggered).c_str(), 1);
      ::setenv("SPROF_RULE_MESSAGE", r.evidence.c_str(), 1);
      ::setenv("SPROF_RULE_RECOMMENDATION", r.recommendation.c_str(), 1);
      ::setenv("SPROF_PROFILE_DIR", dir.c_str(), 1);
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(child, child);  // also here: no window before the child's own call
    notifiers.push_back({child, r.rule, command});
  }

  // Reaps the notifiers that ended.
  void reap() {
    for (auto it = notifiers.begin(); it != notifiers.end();) {
      int status = 0;
      pid_t r = ::waitpid(it->pid, &status, WNOHANG);
      if (r == it->pid || (r < 0 && errno == ECHILD)) {
        it = notifiers.erase(it);
      } else {
        ++it;
      }
    }
  }

  // At the end of the recording: the notifiers get --stop-grace to finish, then their process
  // group is ended (SIGTERM, SIGKILL a second later), and each one stopped is said: a notifier
  // that never returns must not hold the profile back.
  void finish_notifiers() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.stop_grace_s);
    for (reap(); !notifiers.empty() && std::chrono::steady_clock::now() < deadline; reap()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (const Notifier& n : notifiers) {
      spdlog::warn("rule {}: its action 'exec:{}' still ran {:g} s after the job ended (--stop-grace): stopped", n.rule,
                   n.command, options.stop_grace_s);
      ::kill(-n.pid, SIGTERM);
    }
    auto hard = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (reap(); !notifiers.empty() && std::chrono::steady_clock::now() < hard; reap()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (const Notifier& n : notifiers) ::kill(-n.pid, SIGKILL);
    for (const Notifier& n : notifiers) ::waitpid(n.pid, nullptr, 0);
    notifiers.clear();
  }

  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      cv.wait(lock, [this] { return evaluate || stopping; });
      if (stopping) return;
      evaluate = false;
      lock.unlock();
      auto input = input_so_far();
      if (input.ok()) {
        run_once(*input, false);
      } else {
        ++failed_evaluations;  // a file caught mid-write: the next interval reads it whole
        spdlog::debug("rules: {}", input.error().message);
      }
      reap();
      lock.lock();
    }
  }
};

RuleWatch::RuleWatch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RuleWatch::~RuleWatch() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  if (impl_->stopper.joinable()) impl_->stopper.join();
}

Result<std::unique_ptr<RuleWatch>> RuleWatch::create(RuleWatchOptions options) {
  for (const std::string& r : options.rule_flags) SPROF_TRY_STATUS(parse_rule_flag(r, options));
  for (const std::string& a : options.action_flags) SPROF_TRY_STATUS(parse_action_flag(a, options));
  auto impl = std::make_unique<Impl>();
  bool all = std::find(options.rules.begin(), options.rules.end(), "all") != options.rules.end();
  std::vector<std::string> builtin, custom;
  for (const auto& name : options.rules) {
    (options.custom.find(name) ? custom : builtin).push_back(name);
  }
  impl->builtins = !builtin.empty();
  if (!all) impl->rules_options.rules = builtin;
  impl->rules_options.params = options.params;
  // Names and parameters are checked before anything runs.
  std::vector<rules::RuleResult> checked;
  if (impl->builtins) {
    SPROF_TRY(checked, rules::run_rules(rules::RulesInput{}, impl->rules_options));
  }
  std::vector<std::string> watched_names;
  for (const auto& r : checked) watched_names.push_back(r.rule);
  if (!options.custom.empty()) {
    for (const auto& info : options.custom.catalog()) {
      if (custom.empty() || std::find(custom.begin(), custom.end(), info.name) != custom.end()) {
        watched_names.push_back(info.name);
        impl->watched_custom.push_back(info.name);
      }
    }
    impl->custom = std::make_unique<rules::CustomRuleRunner>(options.custom, custom, true);
  }
  if (watched_names.empty()) return make_error(ErrorKind::usage, "no rule to watch: give --rule, --rules or --rule-file");
  for (const auto& entry : options.actions) {
    const std::string& rule = entry.first;
    bool watched = std::find(watched_names.begin(), watched_names.end(), rule) != watched_names.end();
    if (!watched) return make_error(ErrorKind::usage, "--action for {}: that rule is not among the --rule ones", rule);
  }
  if (!(options.interval_s >= 1)) return make_error(ErrorKind::usage, "--rule-interval must be at least 1 second");
  impl->options = std::move(options);
  return std::unique_ptr<RuleWatch>(new RuleWatch(std::move(impl)));
}

void RuleWatch::on_start(const launch::RecordContext& context) {
  impl_->dir = context.output_dir;
  impl_->target = context.target_pid;
  impl_->start_epoch_s = epoch_s();
  impl_->next_eval_ns = context.start_ns + int64_t(impl_->options.interval_s * 1e9);
  impl_->worker = std::thread([impl = impl_.get()] { impl->run(); });
}

void RuleWatch::on_housekeeping(int64_t now_ns) {
  if (now_ns < impl_->next_eval_ns) return;
  impl_->next_eval_ns = now_ns + int64_t(impl_->options.interval_s * 1e9);
  {
    std::lock_guard lock(impl_->mutex);
    impl_->evaluate = true;
  }
  impl_->cv.notify_all();
}

Status RuleWatch::on_finish(const fs::path& /*output_dir*/, store::Manifest& manifest) {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mutex);
    m.stopping = true;
  }
  m.cv.notify_all();
  if (m.worker.joinable()) m.worker.join();
  if (m.stopper.joinable()) m.stopper.join();
  // The finished profile, as `sprof rules` reads it.
  auto profile = query::Profile::open(m.dir);
  auto input = profile.ok() ? rules::load_rules_input(*profile) : Result<rules::RulesInput>(profile.error());
  if (input.ok()) {
    m.run_once(*input, true);
  } else {
    spdlog::warn("rules at the end: {}", input.error().message);
  }
  m.finish_notifiers();
  nlohmann::json section = {{"interval_s", m.options.interval_s},
                            {"rules", m.options.rules},
                            {"custom_rules", custom_names(m.options.custom, m.watched_custom)},
                            {"evaluations", m.evaluations},
                            {"skipped_evaluations", m.failed_evaluations},
                            {"findings", m.events},
                            {"stopped_by", m.stopped_by},
                            {"output", fmt::format("rule-output/ProfilerReport-{}", m.start_epoch_s)}};
  manifest.extra.emplace_back(kRuleWatchSection, section.dump());
  return {};
}

const std::vector<rules::RuleResult>& RuleWatch::final_results() const { return impl_->final_results; }

}  // namespace sprof::watch
