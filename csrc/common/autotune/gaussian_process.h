// Gaussian-process regression, the surrogate model of the autotuner's
// Bayesian optimisation (docs/design/autotune.md).
//
// Model: y(x) = f(x) + e, f ~ GP(0, k) with the RBF kernel
// k(a, b) = exp(-|a - b|^2 / (2 l^2)) over points of the unit box, and
// observation noise e ~ N(0, noise^2). Targets are standardised (zero mean,
// unit variance) before fitting, so `noise` is the noise's standard
// deviation relative to the spread of the observed scores (upstream's
// HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE, in [0, 1]). The length scale l
// is picked from a fixed grid by maximum marginal likelihood at each Fit.
// Cost: O(n^3) per Fit, O(n^2) per Predict; n is the number of trials (tens).
#pragma once

#include <vector>

namespace hvda {
namespace autotune {

using Point = std::vector<double>;

class GaussianProcess {
 public:
  // noise >= 0 (see above).
  explicit GaussianProcess(double noise) : noise_(noise) {}

  // Fits the posterior to samples (x[i], y[i]); replaces any earlier fit.
  // x non-empty, every point of the same dimension, x.size() == y.size().
  void Fit(const std::vector<Point>& x, const std::vector<double>& y);

  // Posterior mean and standard deviation of f at p, in the units of y.
  // Before the first Fit: mean 0, stddev 1.
  void Predict(const Point& p, double* mean, double* stddev) const;

  bool fitted() const { return !x_.empty(); }
  double length_scale() const { return length_; }
  // Standard deviation of the fitted targets (1 when they are all equal).
  double target_scale() const { return y_scale_; }

 private:
  double Kernel(const Point& a, const Point& b, double length) const;
  // Factorises K + (noise^2 + jitter) I for `length` into *l and solves for
  // *alpha; returns the log marginal likelihood of the standardised targets.
  double Factor(double length, std::vector<double>* l, std::vector<double>* alpha) const;

  double noise_;
  std::vector<Point> x_;
  std::vector<double> ys_;  // standardised targets
  double y_mean_ = 0, y_scale_ = 1;
  double length_ = 0.3;
  std::vector<double> chol_;   // Cholesky factor of the noisy kernel matrix
  std::vector<double> alpha_;  // (K + s^2 I)^-1 ys
};

}  // namespace autotune
}  // namespace hvda
