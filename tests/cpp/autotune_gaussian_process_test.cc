// Autotune's Gaussian process (common/autotune/gaussian_process.h) and the
// linear algebra that exists for it (linear_algebra.h): Cholesky solves, fits
// of 1-D and noisy 2-D functions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/autotune/gaussian_process.h"
#include "common/autotune/linear_algebra.h"

namespace hvda {
namespace {

using autotune::GaussianProcess;
using autotune::Point;

constexpr double kPi = 3.14159265358979323846;

TEST(AutotuneLinearAlgebra, CholeskySolvesSpdSystem) {
  // A = M M^T + I for a fixed M is symmetric positive definite.
  const int n = 4;
  std::vector<double> m = {1, 2, 0, 1, 0, 1, 3, 1, 2, 0, 1, 0, 1, 1, 1, 2};
  std::vector<double> a(n * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) a[i * n + j] += m[i * n + k] * m[j * n + k];
      if (i == j) a[i * n + j] += 1;
    }
  std::vector<double> x_true = {1, -2, 0.5, 3}, b(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) b[i] += a[i * n + j] * x_true[j];
  std::vector<double> l = a;
  ASSERT_TRUE(autotune::Cholesky(&l, n));
  autotune::CholeskySolve(l, n, &b);
  for (int i = 0; i < n; ++i) EXPECT_NEAR(b[i], x_true[i], 1e-9);
  std::vector<double> not_spd = {1, 2, 2, 1};
  EXPECT_FALSE(autotune::Cholesky(&not_spd, 2));
}

TEST(AutotuneGaussianProcess, Fits1DFunction) {
  auto f = [](double x) { return 10 + 3 * std::sin(2 * kPi * x); };
  std::vector<Point> x;
  std::vector<double> y;
  for (int i = 0; i <= 10; ++i) {
    x.push_back({i / 10.0});
    y.push_back(f(i / 10.0));
  }
  GaussianProcess gp(0.0);
  gp.Fit(x, y);
  for (double p : {0.05, 0.33, 0.52, 0.77, 0.95}) {
    double m, s;
    gp.Predict({p}, &m, &s);
    EXPECT_NEAR(m, f(p), 0.15) << "at " << p;
    EXPECT_LT(s, 0.5) << "at " << p;
  }
  // Uncertainty grows away from the data.
  GaussianProcess sparse(0.0);
  sparse.Fit({{0.1}, {0.2}}, {1.0, 2.0});
  double m_near, s_near, m_far, s_far;
  sparse.Predict({0.15}, &m_near, &s_near);
  sparse.Predict({0.9}, &m_far, &s_far);
  EXPECT_GT(s_far, 2 * s_near);
}

TEST(AutotuneGaussianProcess, Fits2DFunctionWithNoise) {
  auto f = [](double a, double b) {
    return 100 * std::exp(-((a - 0.3) * (a - 0.3) + (b - 0.7) * (b - 0.7)) / 0.2);
  };
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 1.0);
  std::vector<Point> x;
  std::vector<double> y;
  for (int i = 0; i <= 5; ++i)
    for (int j = 0; j <= 5; ++j) {
      x.push_back({i / 5.0, j / 5.0});
      y.push_back(f(i / 5.0, j / 5.0) + noise(rng));
    }
  GaussianProcess gp(0.1);
  gp.Fit(x, y);
  std::uniform_real_distribution<double> u(0, 1);
  for (int k = 0; k < 20; ++k) {
    const double a = u(rng), b = u(rng);
    double m, s;
    gp.Predict({a, b}, &m, &s);
    EXPECT_NEAR(m, f(a, b), 6.0) << "at (" << a << ", " << b << ")";
  }
}

}  // namespace
}  // namespace hvda
