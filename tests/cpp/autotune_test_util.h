// Small autotune options shared by the ParameterManager and cross-rank
// autotune tests (test code only).
#pragma once

#include "common/autotune/parameter_manager.h"

namespace hvda {
namespace testing {

// Tuning on, short warm-up and trials, 128 MiB fusion and 1 ms cycles to start.
inline AutotuneOptions SmallOptions() {
  AutotuneOptions o;
  o.enabled = true;
  o.warmup_trials = 2;
  o.steps_per_sample = 2;
  o.samples_per_trial = 3;
  o.max_trials = 10;
  o.noise = 0.2;
  o.fusion_threshold_bytes = 128 << 20;
  o.cycle_time_ms = 1;
  return o;
}

}  // namespace testing
}  // namespace hvda
