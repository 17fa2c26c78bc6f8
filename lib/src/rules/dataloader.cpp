// Dataloader (smdebug/profiler/analysis/rules/dataloader.py): the median number of dataloader
// processes active per second is below min_threshold or above max_threshold percent of the CPU
// cores.
//
// Dataloader events are the PyTorch lanes DataLoaderWorker and DataLoaderIter (what smdebug reads);
// sprof also counts TensorFlow's DataIterator lane. smdebug counts a process in the second its event
// starts, which undercounts sprof's DataLoaderWorker events (one per worker lifetime); sprof counts a
// process in every second one of its dataloader events covers, and takes the dataloading-time
// histogram from the batch fetches (DataLoaderIter, DataIterator) only. smdebug resets `prefetch` on
// every dataloader event, so its report says prefetch=true only when a Prefetch event came last; sprof
// reports whether any Prefetch event was seen. --compat smdebug keeps smdebug's behaviour throughout.
//
// sprof also asks what matters most about a DataLoader: whether the training loop waits for it.
// When the loop's iterations (sprof/iterations.hpp) spend more than input_wait_threshold percent of
// their time inside DataLoader fetches, the rule fires whatever the worker count (not under
// --compat smdebug).

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "rules/numeric.hpp"
#include "rules/ordered_map.hpp"
#include "rules/registry.hpp"
#include "sprof/iterations.hpp"

namespace sprof::rules {
namespace {

Json arg_value_json(const store::ArgValue& value) {
  if (auto s = std::get_if<std::string>(&value)) return *s;
  if (auto i = std::get_if<int64_t>(&value)) return *i;
  if (auto d = std::get_if<double>(&value)) return *d;
  if (auto b = std::get_if<bool>(&value)) return *b;
  return nullptr;
}

bool is_dataloader_lane(const std::string& lane, bool compat) {
  if (lane == "DataLoaderWorker" || lane == "DataLoaderIter") return true;
  return !compat && lane == "DataIterator";
}

class Dataloader : public Rule {
 public:
  Dataloader(const Params& params, const RuleContext& context) : params_(params), compat_(context.compat) {
    min_threshold_ = params.number("min_threshold");
    max_threshold_ = params.number("max_threshold");
    patience_ = params.integer("patience");
    if (compat_) return;
    input_wait_threshold_ = params.number("input_wait_threshold");
    loop_ = *context.training_loop;
    prefetch_ = false;
    for (const auto& e : context.input->framework()) {
      auto pid = e.args.integer("pid");
      if (pid && is_dataloader_lane(e.lane, false)) activity_.push_back(Activity{e.start_us, e.end_us, *pid});
    }
    std::sort(activity_.begin(), activity_.end(),
              [](const Activity& a, const Activity& b) { return a.start_us < b.start_us; });
  }

  void on_window(const Window& window) override {
    if (cores_.empty()) {
      for (const store::SystemMetric* m : window.system) {
        if (m->dimension == "CPUUtilization") cores_.insert(m->name);
      }
    }
    OrderedMap<int64_t, std::set<int64_t>> per_second;  // second -> distinct dataloader pids
    for (const store::TraceEvent* e : window.framework) {
      if (parallel_.size() > 1000) parallel_.clear();
      if (e->lane == "DataLoaderIterInitialize") {
        if (const auto* v = e->args.find("pin_memory")) pin_memory_ = arg_value_json(*v);
        if (const auto* v = e->args.find("num_workers")) num_workers_ = arg_value_json(*v);
      }
      if (is_dataloader_lane(e->lane, compat_)) {
        ++datapoints_;
        if (compat_ || e->lane != "DataLoaderWorker") {
          dataloading_time_.push_back(static_cast<double>(e->end_us - e->start_us) / 1000000);
        }
        if (compat_) {
          // smdebug opens the second's bucket even for events without a pid (counting 0 processes).
          auto& pids = per_second[e->start_us / 1000000];
          if (auto pid = e->args.integer("pid")) pids.insert(*pid);
          prefetch_.reset();
        }
      }
      if (e->name.find("Prefetch") != std::string::npos) prefetch_ = true;
    }
    if (!compat_) count_active_seconds(window, per_second);
    if (per_second.empty()) return;
    for (const auto& [second, pids] : per_second) parallel_.push_back(static_cast<double>(pids.size()));
    median_ = static_cast<int64_t>(median(parallel_));
    double cores = static_cast<double>(cores_.size());
    bool checkable = compat_ || !cores_.empty();  // without CPU metrics there is nothing to compare with
    if (checkable && static_cast<int64_t>(parallel_.size()) > patience_ &&
        static_cast<double>(median_) < cores * (min_threshold_ / 100)) {
      ++violations_;
      too_few_ = true;
    }
    if (checkable && static_cast<int64_t>(parallel_.size()) > patience_ &&
        static_cast<double>(median_) > cores * (max_threshold_ / 100)) {
      ++violations_;
      too_many_ = true;
    }
    if (!pin_memory_.is_null()) details_["pin_memory"] = pin_memory_;
    if (!num_workers_.is_null()) details_["num_workers"] = num_workers_;
    if (prefetch_) details_["prefetch"] = *prefetch_;
    details_["cores"] = cores_.size();
    details_["dataloaders"] = median_;
    if (!dataloading_time_.empty()) {
      std::vector<double> sorted = dataloading_time_;
      std::sort(sorted.begin(), sorted.end());
      Histogram h = histogram(dataloading_time_, 100);
      details_["dataloading_time"] = Json{{"p25", quantile_sorted(sorted, 0.25)},
                                          {"p50", quantile_sorted(sorted, 0.50)},
                                          {"p95", quantile_sorted(sorted, 0.95)},
                                          {"probs", h.counts},
                                          {"binedges", h.edges}};
    }
    if (violations_ > 0) triggered_ = 1;
  }

  void finish() override {
    if (!loop_ || loop_->dataloader_s <= 0) return;
    details_["input_wait"] = Json{{"mode", loop_->mode},
                                  {"iterations", loop_->iterations},
                                  {"waiting_percent", 100 * loop_->wait_share()},
                                  {"dataloader_percent", 100 * loop_->dataloader_share()}};
    if (100 * loop_->dataloader_share() > input_wait_threshold_) {
      ++violations_;
      triggered_ = 1;
      loop_waits_ = true;
    }
  }

  // Distinct dataloader pids active in each second of the window that has any dataloader activity.
  void count_active_seconds(const Window& window, OrderedMap<int64_t, std::set<int64_t>>& per_second) {
    while (next_ < activity_.size() && activity_[next_].start_us < window.end_us) active_.push_back(activity_[next_++]);
    std::erase_if(active_, [&](const Activity& a) { return a.end_us < window.start_us; });
    std::map<int64_t, std::set<int64_t>> seconds;
    for (const Activity& a : active_) {
      int64_t from = std::max(a.start_us, window.start_us) / 1000000;
      int64_t to = std::min(a.end_us, window.end_us - 1) / 1000000;
      for (int64_t s = from; s <= to; ++s) seconds[s].insert(a.pid);
    }
    for (auto& [second, pids] : seconds) per_second[second] = std::move(pids);
  }

  std::string rule_parameters() const override {
    return fmt::format("min_threshold:{}\nmax_threshold:{}", params_.str("min_threshold"), params_.str("max_threshold"));
  }

  std::string evidence() const override {
    if (datapoints_ == 0) return "no dataloader events";
    std::string text = fmt::format("median {} dataloader process(es) active per second on {} core(s)", median_,
                                   cores_.size());
    if (too_few_) text += fmt::format(" (below {}% of the cores)", params_.str("min_threshold"));
    if (too_many_) text += fmt::format(" (above {}% of the cores)", params_.str("max_threshold"));
    if (!too_few_ && !too_many_ && static_cast<int64_t>(parallel_.size()) <= patience_) {
      text += fmt::format("; {} second(s) with dataloader events, more than {} needed", parallel_.size(), patience_);
    }
    if (pin_memory_.is_boolean() && !pin_memory_.get<bool>()) text += "; pin_memory off";
    if (loop_ && loop_->dataloader_s > 0) {
      text += fmt::format("; the {} loop waits in DataLoader fetches {:.1f}% of its time{}", loop_->mode,
                          100 * loop_->dataloader_share(),
                          loop_waits_ ? fmt::format(" (above {}%)", params_.str("input_wait_threshold")) : "");
    }
    return text;
  }

 private:
  struct Activity {
    int64_t start_us, end_us, pid;
  };

  Params params_;
  bool compat_;
  std::vector<Activity> activity_, active_;
  size_t next_ = 0;
  double min_threshold_, max_threshold_;
  int64_t patience_;
  std::set<std::string> cores_;
  std::vector<double> parallel_;
  std::vector<double> dataloading_time_;
  Json pin_memory_ = nullptr, num_workers_ = nullptr;
  std::optional<bool> prefetch_;
  int64_t median_ = 0;
  bool too_few_ = false, too_many_ = false;
  double input_wait_threshold_ = 20;
  std::optional<IterationStats> loop_;
  bool loop_waits_ = false;
};

}  // namespace

RuleDef dataloader_rule() {
  RuleDef def;
  def.info = RuleInfo{
      "Dataloader",
      "The median number of dataloader processes running in parallel is below min_threshold or above "
      "max_threshold percent of the CPU cores.",
      "Match the number of dataloader workers to the CPU cores, enable pin_memory, and prefetch batches; when "
      "the training loop waits for its batches, add workers or make each item cheaper to load.",
      {{"min_threshold", ParamKind::positive, "70", "fewest parallel dataloaders, in % of the cores"},
       {"max_threshold", ParamKind::positive, "200", "most parallel dataloaders, in % of the cores"},
       {"patience", ParamKind::count, "10", "seconds with dataloader events before the first check (sprof: settable)"},
       {"input_wait_threshold", ParamKind::percent, "20",
        "sprof: most time the training loop may wait in DataLoader fetches, in % of its iterations' time"},
       {"scan_interval_us", ParamKind::count, "60000000", "evaluation window (µs)"}},
      true};
  def.make = [](const Params& params, const RuleContext& context) {
    return std::make_unique<Dataloader>(params, context);
  };
  def.missing_input = [](const RulesInput& input) -> std::optional<std::string> {
    for (const auto& e : input.framework()) {
      if (is_dataloader_lane(e.lane, false)) {
        if (!has_dimension(input, "CPUUtilization")) return "no CPU metrics to compare the dataloaders with";
        return std::nullopt;
      }
    }
    return "no dataloader events (DataLoaderWorker, DataLoaderIter or DataIterator lanes)";
  };
  return def;
}

}  // namespace sprof::rules
