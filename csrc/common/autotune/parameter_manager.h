// ParameterManager: the current values of the tunable settings (fusion
// threshold, cycle time) of one Runtime generation, and, with
// HOROVOD_AUTOTUNE, the search for better ones (docs/design/autotune.md).
//
// NOTE [Autotune sync]: fusion is planned independently on every rank, so
// every rank must use the same threshold in the same cycle. Only global
// rank 0 tunes (Record -> a trial ends -> the next values wait in
// HasUpdate). The global set's controller on rank 0 then clears a bit of
// its next cycle's AND, which sends every rank down the slow path; the
// broadcast response list carries the values (ResponseList::params), and
// every rank Apply()s them before fusing that same cycle's responses. Other
// process sets' cycles run after the global set's within one Runtime cycle,
// on every rank alike, so they see the new values from the same cycle too.
// The cycle time only paces each rank's background loop (no effect on
// results); it travels the same way so that all ranks keep one pace.
//
// Threads: fusion_threshold_bytes()/cycle_time_ms() from any thread; the
// rest from whoever runs cycles (serialised by the Runtime's cycle mutex).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/autotune/autotune_log.h"
#include "common/autotune/bayesian_optimization.h"
#include "common/autotune/score_sampler.h"
#include "common/message.h"
#include "common/util/settings.h"
#include "common/util/logging.h"
#include "common/util/status.h"

namespace hvda {

struct AutotuneOptions {
  bool enabled = false;         // HOROVOD_AUTOTUNE
  std::string log_path;         // HOROVOD_AUTOTUNE_LOG ("" = no log)
  int warmup_trials = 3;        // HOROVOD_AUTOTUNE_WARMUP_SAMPLES: first trials discarded
  int steps_per_sample = 10;    // HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE
  int max_trials = 20;          // HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES: scored trials
  double noise = 0.8;           // HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE, in [0, 1]
  int samples_per_trial = 5;    // upstream's constant: a trial's score is a median of 5
  // Starting values; a value the user set explicitly is fixed (not tuned).
  int64_t fusion_threshold_bytes = 128 << 20;  // HOROVOD_FUSION_THRESHOLD
  bool fusion_fixed = false;
  double cycle_time_ms = 1;                    // HOROVOD_CYCLE_TIME
  bool cycle_fixed = false;
  // The search box; widened to include the starting values.
  double max_fusion_mib = 64;
  double min_cycle_ms = 1, max_cycle_ms = 25;
  // Log columns for settings this build does not tune: the values in effect.
  bool hierarchical_allreduce = false, hierarchical_allgather = false, cache_enabled = true;
};

// The HOROVOD_AUTOTUNE* settings and the starting values, and whether the
// user fixed them (their ranges were checked when the settings were read).
AutotuneOptions AutotuneOptionsFrom(const Settings& settings);

class ParameterManager {
 public:
  using Clock = std::chrono::steady_clock;

  // root: this is global rank 0 (it tunes and writes the log). log: borrowed,
  // may be null, outlives this.
  ParameterManager(AutotuneOptions options, bool root, const Logger* log);

  // The values every rank uses now (NOTE [Autotune sync]).
  int64_t fusion_threshold_bytes() const { return fusion_bytes_.load(std::memory_order_relaxed); }
  double cycle_time_ms() const { return cycle_ms_.load(std::memory_order_relaxed); }

  // Root: the search still runs (false once frozen, without autotune, on
  // other ranks, and when every tunable value is fixed).
  bool tuning() const { return tuning_; }
  int trials_scored() const { return trials_; }

  // Root, from the global set's controller, once per cycle: the responses
  // that cycle decided, at time `now`. May end a trial and queue an update.
  void Record(const std::vector<Response>& responses, Clock::time_point now);
  // Root: values decided and not yet sent (NOTE [Autotune sync]).
  bool HasUpdate() const { return has_update_; }
  TunedParameters TakeUpdate();
  // Every rank, in the cycle whose response list carries `p`.
  void Apply(const TunedParameters& p);

 private:
  struct Trial {
    TunedParameters params;
    double score;
  };
  // Coordinates of the tuned settings in the unit box (fixed ones left out).
  autotune::Point Normalize(const TunedParameters& p) const;
  TunedParameters Denormalize(const autotune::Point& x) const;
  void OnTrial(double score);
  void WriteRow(const TunedParameters& p, double score);
  void Info(const std::string& msg) const;

  AutotuneOptions opt_;
  bool root_;
  const Logger* log_;
  std::atomic<int64_t> fusion_bytes_;
  std::atomic<double> cycle_ms_;
  TunedParameters current_;
  bool tuning_ = false;
  bool has_update_ = false;
  TunedParameters update_;
  int warmup_left_ = 0;
  int trials_ = 0;
  std::vector<Trial> trials_seen_;
  std::vector<autotune::Point> design_;  // first points tried after the start values
  std::unique_ptr<autotune::BayesianOptimization> bo_;
  autotune::ScoreSampler sampler_;
  autotune::TrialLog file_;
};

}  // namespace hvda
