#include "common/autotune/parameter_manager.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hvda {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Points tried after the start values, before the Bayesian optimisation
// proposes any: (fusion, cycle) in the unit box, spread over it.
constexpr double kDesign[][2] = {{0.25, 0.15}, {0.75, 0.4}, {0.05, 0.8}};

std::string Num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

AutotuneOptions AutotuneOptionsFrom(const Settings& settings) {
  AutotuneOptions o;
  o.enabled = settings.autotune;
  o.log_path = settings.autotune_log;
  // Ranges are the table's (settings_table.h), checked when read.
  o.warmup_trials = static_cast<int>(settings.autotune_warmup_samples);
  o.steps_per_sample = static_cast<int>(settings.autotune_steps_per_sample);
  o.max_trials = static_cast<int>(settings.autotune_max_samples);
  o.noise = settings.autotune_noise;
  o.fusion_threshold_bytes = settings.fusion_threshold;
  o.fusion_fixed = settings.IsSet(setting_env::fusion_threshold);
  o.cycle_time_ms = settings.cycle_time_ms;
  o.cycle_fixed = settings.IsSet(setting_env::cycle_time_ms);
  o.cache_enabled = settings.cache_capacity > 0;
  return o;
}

ParameterManager::ParameterManager(AutotuneOptions options, bool root, const Logger* log)
    : opt_(std::move(options)),
      root_(root),
      log_(log),
      fusion_bytes_(opt_.fusion_threshold_bytes),
      cycle_ms_(opt_.cycle_time_ms),
      sampler_(std::max(1, opt_.steps_per_sample), std::max(1, opt_.samples_per_trial)) {
  current_.fusion_threshold_bytes = opt_.fusion_threshold_bytes;
  current_.cycle_time_ms = opt_.cycle_time_ms;
  opt_.max_fusion_mib = std::max(opt_.max_fusion_mib, opt_.fusion_threshold_bytes / kMiB);
  opt_.min_cycle_ms = std::min(opt_.min_cycle_ms, opt_.cycle_time_ms);
  opt_.max_cycle_ms = std::max(opt_.max_cycle_ms, opt_.cycle_time_ms);
  if (!opt_.enabled || !root_) return;
  const int dims = (opt_.fusion_fixed ? 0 : 1) + (opt_.cycle_fixed ? 0 : 1);
  if (dims == 0) {
    if (log_)
      log_->Log(LogLevel::kWarning,
                std::string(setting_env::autotune) + " is set, but " +
                    setting_env::fusion_threshold + " and " + setting_env::cycle_time_ms +
                    " are both set explicitly, which fixes them: there is nothing to tune. "
                    "Unset one of them to tune it.");
    return;
  }
  tuning_ = true;
  warmup_left_ = opt_.warmup_trials;
  bo_ = std::make_unique<autotune::BayesianOptimization>(dims, opt_.noise);
  for (const auto& full : kDesign) {
    autotune::Point p;
    if (!opt_.fusion_fixed) p.push_back(full[0]);
    if (!opt_.cycle_fixed) p.push_back(full[1]);
    design_.push_back(p);
  }
  if (!opt_.log_path.empty()) {
    std::string why;
    if (!file_.Open(opt_.log_path, &why) && log_)
      log_->Log(LogLevel::kWarning, std::string(setting_env::autotune_log) + "=" + opt_.log_path +
                                        " cannot be written (" + why +
                                        "); autotuning goes on without its log.");
  }
  Info("autotune: tuning" + std::string(opt_.fusion_fixed ? "" : " fusion threshold [0, " +
                                        Num(opt_.max_fusion_mib) + "] MiB") +
       (opt_.cycle_fixed ? "" : " cycle time [" + Num(opt_.min_cycle_ms) + ", " +
                                    Num(opt_.max_cycle_ms) + "] ms") +
       "; " + std::to_string(opt_.warmup_trials) + " warm-up and " +
       std::to_string(opt_.max_trials) + " scored trials of " +
       std::to_string(opt_.samples_per_trial) + " x " + std::to_string(opt_.steps_per_sample) +
       " steps");
}

void ParameterManager::Info(const std::string& msg) const {
  if (log_ && log_->Enabled(LogLevel::kInfo)) log_->Log(LogLevel::kInfo, msg);
}

autotune::Point ParameterManager::Normalize(const TunedParameters& p) const {
  autotune::Point x;
  auto unit = [](double v, double lo, double hi) {
    return hi > lo ? std::min(1.0, std::max(0.0, (v - lo) / (hi - lo))) : 0.0;
  };
  if (!opt_.fusion_fixed) x.push_back(unit(p.fusion_threshold_bytes / kMiB, 0, opt_.max_fusion_mib));
  if (!opt_.cycle_fixed) x.push_back(unit(p.cycle_time_ms, opt_.min_cycle_ms, opt_.max_cycle_ms));
  return x;
}

TunedParameters ParameterManager::Denormalize(const autotune::Point& x) const {
  TunedParameters p = current_;
  size_t i = 0;
  if (!opt_.fusion_fixed) {
    const double kib = std::round(x[i++] * opt_.max_fusion_mib * 1024);  // whole KiB
    p.fusion_threshold_bytes = static_cast<int64_t>(kib) * 1024;
  }
  if (!opt_.cycle_fixed) {
    const double ms = opt_.min_cycle_ms + x[i++] * (opt_.max_cycle_ms - opt_.min_cycle_ms);
    p.cycle_time_ms = std::round(ms * 100) / 100;  // 10 us steps
  }
  return p;
}

void ParameterManager::WriteRow(const TunedParameters& p, double score) {
  autotune::LogRow row;
  row.hierarchical_allreduce = opt_.hierarchical_allreduce;
  row.hierarchical_allgather = opt_.hierarchical_allgather;
  row.cache_enabled = opt_.cache_enabled;
  row.cycle_time_ms = p.cycle_time_ms;
  row.fusion_threshold_mib = p.fusion_threshold_bytes / kMiB;
  row.score = score;
  file_.Write(row);
}

void ParameterManager::Record(const std::vector<Response>& responses, Clock::time_point now) {
  if (!root_ || !tuning_ || has_update_) return;
  double score = 0;
  if (sampler_.Add(responses, now, &score)) OnTrial(score);
}

void ParameterManager::OnTrial(double score) {
  const std::string values = "cycle time " + Num(current_.cycle_time_ms) + " ms, fusion threshold " +
                             Num(current_.fusion_threshold_bytes / kMiB) + " MiB";
  if (warmup_left_ > 0) {
    --warmup_left_;
    Info("autotune: warm-up trial (" + values + "): " + Num(score) + " bytes/us, discarded; " +
         std::to_string(warmup_left_) + " warm-up trials left");
    return;  // same values, next trial
  }
  WriteRow(current_, score);
  bo_->AddSample(Normalize(current_), score);
  trials_seen_.push_back(Trial{current_, score});
  ++trials_;
  Info("autotune: trial " + std::to_string(trials_) + "/" + std::to_string(opt_.max_trials) +
       " (" + values + "): " + Num(score) + " bytes/us");
  if (trials_ >= opt_.max_trials) {
    const Trial& best = trials_seen_[std::max(0, bo_->BestIndex())];
    update_ = best.params;
    tuning_ = false;
    WriteRow(best.params, best.score);
    Info("autotune: done; keeping cycle time " + Num(best.params.cycle_time_ms) +
         " ms, fusion threshold " + Num(best.params.fusion_threshold_bytes / kMiB) + " MiB (" +
         Num(best.score) + " bytes/us)");
  } else if (trials_ <= static_cast<int>(design_.size())) {
    update_ = Denormalize(design_[trials_ - 1]);
  } else {
    update_ = Denormalize(bo_->NextSample());
  }
  has_update_ = true;
}

TunedParameters ParameterManager::TakeUpdate() {
  has_update_ = false;
  return update_;
}

void ParameterManager::Apply(const TunedParameters& p) {
  current_ = p;
  fusion_bytes_.store(p.fusion_threshold_bytes, std::memory_order_relaxed);
  cycle_ms_.store(p.cycle_time_ms, std::memory_order_relaxed);
  sampler_.Restart();  // the next trial measures the new values only
}

}  // namespace hvda
