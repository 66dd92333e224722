#include "common/autotune/score_sampler.h"

#include <algorithm>

#include "common/fusion.h"

namespace hvda {
namespace autotune {

bool ScoreSampler::Counts(const Response& r) {
  switch (r.type) {
    case ResponseType::kAllreduce:
    case ResponseType::kAllgather:
    case ResponseType::kBroadcast:
    case ResponseType::kAdasum:
    case ResponseType::kAlltoall:
    case ResponseType::kReducescatter:
      return true;
    default:
      return false;
  }
}

void ScoreSampler::Restart() {
  started_ = false;
  bytes_ = 0;
  sample_ = 0;
  counts_.clear();
  scores_.clear();
}

bool ScoreSampler::Add(const std::vector<Response>& responses, Clock::time_point now,
                       double* score) {
  int64_t bytes = 0;
  bool any = false, next_step = false;
  for (const Response& r : responses) {
    if (!Counts(r)) continue;
    any = true;
    bytes += ResponseBytes(r);
    // The name's (sample_ + 1) * steps_per_sample-th repeat starts the next sample.
    for (const std::string& name : r.names)
      if (counts_[name]++ >= (sample_ + 1) * steps_per_sample_) next_step = true;
  }
  if (!any) return false;
  if (!started_) {
    started_ = true;
    start_ = now;
    bytes_ = bytes;
    return false;
  }
  if (next_step) {
    const double us = std::chrono::duration<double, std::micro>(now - start_).count();
    scores_.push_back(us > 0 ? static_cast<double>(bytes_) / us : 0.0);
    bytes_ = 0;
    start_ = now;
    ++sample_;
  }
  bytes_ += bytes;
  if (static_cast<int>(scores_.size()) < samples_per_trial_) return false;

  std::vector<double> sorted = scores_;
  std::sort(sorted.begin(), sorted.end());
  *score = sorted[sorted.size() / 2];
  // This cycle is the first of the next trial.
  scores_.clear();
  sample_ = 0;
  counts_.clear();
  for (const Response& r : responses)
    if (Counts(r))
      for (const std::string& name : r.names) ++counts_[name];
  return true;
}

}  // namespace autotune
}  // namespace hvda
