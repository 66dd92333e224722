// Measures the throughput one set of parameter values achieves (the
// autotuner's score), the way upstream Horovod defines it:
// - a *step* ends when some tensor name is decided again (a training step
//   reduces each gradient once, under a stable name);
// - a *sample* is a window of `steps_per_sample` steps; its score is the
//   bytes of the data responses decided in the window per microsecond of
//   wall time (so waiting, negotiation and execution all count);
// - a *trial* is `samples_per_trial` consecutive samples; its score is their
//   median (robust to one slow window).
// Ops whose names never repeat (e.g. unnamed ops of a benchmark loop) never
// complete a sample; give them names to autotune such a job.
// Used on global rank 0 only, by the cycle thread; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/message.h"

namespace hvda {
namespace autotune {

class ScoreSampler {
 public:
  using Clock = std::chrono::steady_clock;

  // steps_per_sample >= 1, samples_per_trial >= 1.
  ScoreSampler(int steps_per_sample, int samples_per_trial)
      : steps_per_sample_(steps_per_sample), samples_per_trial_(samples_per_trial) {}

  // Accounts the responses one cycle decided, at time `now`. Returns true
  // when this cycle completed a trial, with *score its median sample score
  // (bytes/us). The cycle that completes a trial already counts towards the
  // next one (Restart() forgets it when the parameters change).
  bool Add(const std::vector<Response>& responses, Clock::time_point now, double* score);

  // Forgets everything measured: the next Add starts a new trial.
  void Restart();

  // Whether a response moves tensor data (joins, barriers, errors and
  // process-set changes do not count).
  static bool Counts(const Response& r);

 private:
  int steps_per_sample_;
  int samples_per_trial_;
  bool started_ = false;
  Clock::time_point start_;  // of the current sample
  int64_t bytes_ = 0;        // decided in the current sample
  int sample_ = 0;           // index of the current sample in the trial
  std::unordered_map<std::string, int> counts_;  // decisions per name in this trial
  std::vector<double> scores_;
};

}  // namespace autotune
}  // namespace hvda
