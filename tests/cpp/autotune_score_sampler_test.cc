// Autotune's score sampler (common/autotune/score_sampler.h): bytes per
// microsecond, the median of samples of steps, joins not counted.
#include <gtest/gtest.h>

#include <chrono>

#include "common/autotune/score_sampler.h"
#include "message_test_util.h"

namespace hvda {
namespace {

using testing::MakeResponse;
using Clock = std::chrono::steady_clock;

TEST(AutotuneScoreSampler, MedianOfSamplesOfSteps) {
  // 2 steps per sample, 3 samples per trial; one 4000-byte tensor per step,
  // one step per 10 us except one slow step, which the median ignores.
  autotune::ScoreSampler s(2, 3);
  Clock::time_point t{};
  double score = -1;
  int steps = 0;
  bool done = false;
  Response join;
  join.type = ResponseType::kJoin;
  join.names = {"join"};
  EXPECT_FALSE(s.Add({join}, t, &score)) << "joins do not count";
  while (!done && steps < 100) {
    done = s.Add({MakeResponse("g", {1000})}, t, &score);
    ++steps;
    t += std::chrono::microseconds(steps == 2 ? 1000 : 10);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(steps, 3 * 2 + 1) << "the trial ends when the step after its last sample begins";
  EXPECT_NEAR(score, 8000.0 / 20.0, 1e-9) << "bytes per microsecond, median of 3";
}

}  // namespace
}  // namespace hvda
