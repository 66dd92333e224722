// Autotune's Bayesian optimiser (common/autotune/bayesian_optimization.h):
// expected improvement, and finding the maximum of a smooth noisy score.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/autotune/bayesian_optimization.h"

namespace hvda {
namespace {

using autotune::BayesianOptimization;
using autotune::Point;

TEST(AutotuneBayesianOptimization, ExpectedImprovementPrefersBestAndUnexplored) {
  BayesianOptimization bo(1, 0.1);
  bo.AddSample({0.1}, 1.0);
  bo.AddSample({0.2}, 1.1);
  bo.AddSample({0.3}, 1.0);
  bo.AddSample({0.6}, 5.0);
  const double explored_low = bo.ExpectedImprovement({0.2});
  EXPECT_GT(bo.ExpectedImprovement({0.65}), explored_low) << "near the best";
  EXPECT_GT(bo.ExpectedImprovement({0.95}), explored_low) << "unexplored";
  EXPECT_GE(explored_low, 0.0);
  EXPECT_EQ(bo.BestIndex(), 3);
  const Point next = bo.NextSample();
  EXPECT_GT(next[0], 0.4) << "the next sample should not be in the explored low region";
}

TEST(AutotuneBayesianOptimization, FindsMaximumOfSmoothNoisyScore) {
  // Peak 100 at (0.7, 0.25); noise ~1% of the peak.
  auto f = [](const Point& p) {
    return 100 - 150 * ((p[0] - 0.7) * (p[0] - 0.7) + (p[1] - 0.25) * (p[1] - 0.25));
  };
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1.0);
  BayesianOptimization bo(2, 0.2);
  Point x = {0.5, 0.5};
  for (int i = 0; i < 20; ++i) {
    bo.AddSample(x, f(x) + noise(rng));
    x = bo.NextSample();
    ASSERT_EQ(x.size(), 2u);
    ASSERT_TRUE(x[0] >= 0 && x[0] <= 1 && x[1] >= 0 && x[1] <= 1);
  }
  // Replay to find the chosen best point: BestIndex refers to AddSample order.
  std::mt19937 rng2(7);
  std::normal_distribution<double> noise2(0, 1.0);
  BayesianOptimization replay(2, 0.2);
  std::vector<Point> tried;
  x = {0.5, 0.5};
  for (int i = 0; i < 20; ++i) {
    tried.push_back(x);
    replay.AddSample(x, f(x) + noise2(rng2));
    x = replay.NextSample();
  }
  const Point best = tried[replay.BestIndex()];
  EXPECT_GT(f(best), 97.0) << "best (" << best[0] << ", " << best[1] << ")";
}

}  // namespace
}  // namespace hvda
