// Test helpers for tests/kernels: seeded random tensors and max-abs-difference comparisons.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ds::test {

inline std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> uniform(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// ||a - b|| / ||b|| (Euclidean norms, in double).
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i)
    num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / (den > 1e-30 ? den : 1e-30));
}

// max_i |a_i - b_i| / (atol + rtol * |b_i|) <= 1 means "within tolerance".
inline double max_scaled_err(const float* a, const float* b, size_t n, double atol, double rtol) {
  double worst = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    const double e = d / (atol + rtol * std::fabs(double(b[i])));
    if (!(e <= worst)) worst = e;  // NaN propagates as "worse"
  }
  return worst;
}

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

}  // namespace ds::test
