#include "common/autotune/gaussian_process.h"

#include <cmath>
#include <limits>

#include "common/autotune/linear_algebra.h"

namespace hvda {
namespace autotune {
namespace {

// Candidate length scales, in units of the unit box's side.
constexpr double kLengthGrid[] = {0.08, 0.15, 0.25, 0.4, 0.6, 1.0};
constexpr double kPi = 3.14159265358979323846;

}  // namespace

double GaussianProcess::Kernel(const Point& a, const Point& b, double length) const {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-d2 / (2 * length * length));
}

double GaussianProcess::Factor(double length, std::vector<double>* l,
                               std::vector<double>* alpha) const {
  const int n = static_cast<int>(x_.size());
  // A little jitter keeps K positive definite with noise 0 and repeated
  // points; grown until the factorisation succeeds.
  for (double jitter = 1e-8; jitter < 1; jitter *= 100) {
    l->assign(static_cast<size_t>(n) * n, 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) (*l)[i * n + j] = Kernel(x_[i], x_[j], length);
    for (int i = 0; i < n; ++i) (*l)[i * n + i] += noise_ * noise_ + jitter;
    if (!Cholesky(l, n)) continue;
    *alpha = ys_;
    CholeskySolve(*l, n, alpha);
    double fit = 0, log_det = 0;
    for (int i = 0; i < n; ++i) {
      fit += ys_[i] * (*alpha)[i];
      log_det += std::log((*l)[i * n + i]);
    }
    return -0.5 * fit - log_det - 0.5 * n * std::log(2 * kPi);
  }
  return -std::numeric_limits<double>::infinity();
}

void GaussianProcess::Fit(const std::vector<Point>& x, const std::vector<double>& y) {
  x_ = x;
  const size_t n = y.size();
  y_mean_ = 0;
  for (double v : y) y_mean_ += v;
  y_mean_ /= static_cast<double>(n);
  double var = 0;
  for (double v : y) var += (v - y_mean_) * (v - y_mean_);
  var /= static_cast<double>(n);
  y_scale_ = var > 1e-300 ? std::sqrt(var) : 1.0;
  ys_.resize(n);
  for (size_t i = 0; i < n; ++i) ys_[i] = (y[i] - y_mean_) / y_scale_;

  double best = -std::numeric_limits<double>::infinity();
  for (double length : kLengthGrid) {
    std::vector<double> l, alpha;
    const double lml = Factor(length, &l, &alpha);
    if (lml > best || chol_.empty()) {
      best = lml;
      length_ = length;
      chol_ = std::move(l);
      alpha_ = std::move(alpha);
    }
  }
}

void GaussianProcess::Predict(const Point& p, double* mean, double* stddev) const {
  if (x_.empty()) {
    *mean = 0;
    *stddev = 1;
    return;
  }
  const int n = static_cast<int>(x_.size());
  std::vector<double> k(n);
  double m = 0;
  for (int i = 0; i < n; ++i) {
    k[i] = Kernel(p, x_[i], length_);
    m += k[i] * alpha_[i];
  }
  SolveLower(chol_, n, &k);
  double var = 1.0;  // prior variance of the standardised f
  for (double v : k) var -= v * v;
  *mean = y_mean_ + m * y_scale_;
  *stddev = std::sqrt(var > 1e-12 ? var : 1e-12) * y_scale_;
}

}  // namespace autotune
}  // namespace hvda
