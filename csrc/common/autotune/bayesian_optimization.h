// Bayesian optimisation of a noisy, expensive function over the unit box
// [0, 1]^dims (the autotuner's normalised parameter space): a Gaussian
// process fitted to the samples so far is the surrogate; the next point to
// try maximises expected improvement (EI) over a candidate set of uniform
// random points plus perturbations of the best samples. Maximises.
//
// Deterministic for a given seed (only global rank 0 runs it, but repeated
// runs of a job then try the same points for the same scores).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/autotune/gaussian_process.h"

namespace hvda {
namespace autotune {

class BayesianOptimization {
 public:
  // dims >= 1; noise: see GaussianProcess.
  BayesianOptimization(int dims, double noise, uint32_t seed = 1);

  // Records that f(x) = y; x in the unit box.
  void AddSample(const Point& x, double y);
  // The point to try next (in the unit box). Before any sample: the centre.
  Point NextSample();

  // EI of p under the current fit, in the units of y (>= 0). Maximising it
  // trades a high posterior mean (exploit) against a high posterior
  // standard deviation (explore).
  double ExpectedImprovement(const Point& p) const;

  int dims() const { return dims_; }
  size_t samples() const { return y_.size(); }
  // Index (in AddSample order) of the sample with the highest posterior
  // mean: the best point, judged robustly to noisy scores. -1 before any.
  int BestIndex() const;

 private:
  void Refit();

  int dims_;
  GaussianProcess gp_;
  std::vector<Point> x_;
  std::vector<double> y_;
  double incumbent_ = 0;  // highest posterior mean over the samples
  std::mt19937 rng_;
};

}  // namespace autotune
}  // namespace hvda
