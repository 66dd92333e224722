// The few dense linear-algebra routines the autotuner's Gaussian process
// needs (matrices of a few dozen rows: one row per tuning trial). Matrices
// are row-major std::vector<double> of n*n entries. No external library.
#pragma once

#include <vector>

namespace hvda {
namespace autotune {

// In place: replaces the symmetric matrix `a` (n x n, only the lower
// triangle is read) with its lower-triangular Cholesky factor L, a = L L^T;
// the upper triangle is zeroed. Returns false, leaving `a` unspecified, when
// `a` is not (numerically) positive definite.
bool Cholesky(std::vector<double>* a, int n);

// Solves L y = b for y (forward substitution), in place on b.
void SolveLower(const std::vector<double>& l, int n, std::vector<double>* b);

// Solves L^T x = b for x (back substitution), in place on b.
void SolveUpper(const std::vector<double>& l, int n, std::vector<double>* b);

// Solves (L L^T) x = b, in place on b.
void CholeskySolve(const std::vector<double>& l, int n, std::vector<double>* b);

}  // namespace autotune
}  // namespace hvda
