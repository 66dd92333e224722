#include "common/autotune/linear_algebra.h"

#include <cmath>

namespace hvda {
namespace autotune {

bool Cholesky(std::vector<double>* a, int n) {
  std::vector<double>& m = *a;
  for (int j = 0; j < n; ++j) {
    double d = m[j * n + j];
    for (int k = 0; k < j; ++k) d -= m[j * n + k] * m[j * n + k];
    if (!(d > 0.0) || !std::isfinite(d)) return false;
    const double ljj = std::sqrt(d);
    m[j * n + j] = ljj;
    for (int i = j + 1; i < n; ++i) {
      double s = m[i * n + j];
      for (int k = 0; k < j; ++k) s -= m[i * n + k] * m[j * n + k];
      m[i * n + j] = s / ljj;
    }
    for (int k = j + 1; k < n; ++k) m[j * n + k] = 0.0;
  }
  return true;
}

void SolveLower(const std::vector<double>& l, int n, std::vector<double>* b) {
  std::vector<double>& x = *b;
  for (int i = 0; i < n; ++i) {
    double s = x[i];
    for (int k = 0; k < i; ++k) s -= l[i * n + k] * x[k];
    x[i] = s / l[i * n + i];
  }
}

void SolveUpper(const std::vector<double>& l, int n, std::vector<double>* b) {
  std::vector<double>& x = *b;
  for (int i = n - 1; i >= 0; --i) {
    double s = x[i];
    for (int k = i + 1; k < n; ++k) s -= l[k * n + i] * x[k];
    x[i] = s / l[i * n + i];
  }
}

void CholeskySolve(const std::vector<double>& l, int n, std::vector<double>* b) {
  SolveLower(l, n, b);
  SolveUpper(l, n, b);
}

}  // namespace autotune
}  // namespace hvda
