#include "common/autotune/bayesian_optimization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace hvda {
namespace autotune {
namespace {

constexpr int kRandomCandidates = 2000;
constexpr int kLocalCandidates = 200;  // around each of the best samples
constexpr int kLocalCentres = 3;
constexpr double kLocalSpread = 0.05;
// Minimum improvement worth exploring for, in units of the scores' spread.
constexpr double kXi = 0.01;

double NormalPdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * 3.14159265358979323846); }
double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

BayesianOptimization::BayesianOptimization(int dims, double noise, uint32_t seed)
    : dims_(dims), gp_(noise), rng_(seed) {}

void BayesianOptimization::AddSample(const Point& x, double y) {
  x_.push_back(x);
  y_.push_back(y);
  Refit();
}

void BayesianOptimization::Refit() {
  gp_.Fit(x_, y_);
  incumbent_ = -std::numeric_limits<double>::infinity();
  for (const Point& x : x_) {
    double m, s;
    gp_.Predict(x, &m, &s);
    incumbent_ = std::max(incumbent_, m);
  }
}

double BayesianOptimization::ExpectedImprovement(const Point& p) const {
  if (!gp_.fitted()) return 1.0;
  double mean, sd;
  gp_.Predict(p, &mean, &sd);
  const double gain = mean - incumbent_ - kXi * gp_.target_scale();
  const double z = gain / sd;
  return std::max(0.0, gain * NormalCdf(z) + sd * NormalPdf(z));
}

int BayesianOptimization::BestIndex() const {
  int best = -1;
  double top = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < x_.size(); ++i) {
    double m, s;
    gp_.Predict(x_[i], &m, &s);
    if (m > top) {
      top = m;
      best = static_cast<int>(i);
    }
  }
  return best;
}

Point BayesianOptimization::NextSample() {
  if (x_.empty()) return Point(dims_, 0.5);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> step(0.0, kLocalSpread);
  std::vector<Point> candidates;
  candidates.reserve(kRandomCandidates + kLocalCentres * kLocalCandidates);
  for (int i = 0; i < kRandomCandidates; ++i) {
    Point p(dims_);
    for (double& v : p) v = uniform(rng_);
    candidates.push_back(std::move(p));
  }
  // Local refinement around the samples with the highest observed scores.
  std::vector<size_t> order(y_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y_[a] > y_[b]; });
  for (size_t c = 0; c < order.size() && c < static_cast<size_t>(kLocalCentres); ++c) {
    for (int i = 0; i < kLocalCandidates; ++i) {
      Point p = x_[order[c]];
      for (double& v : p) v = std::min(1.0, std::max(0.0, v + step(rng_)));
      candidates.push_back(std::move(p));
    }
  }
  Point best = candidates.front();
  double best_ei = -1;
  for (const Point& p : candidates) {
    const double ei = ExpectedImprovement(p);
    if (ei > best_ei) {
      best_ei = ei;
      best = p;
    }
  }
  return best;
}

}  // namespace autotune
}  // namespace hvda
