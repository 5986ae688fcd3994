// Test helper: seeded random f32 / bf16 weight matrices owned by the test, viewed as WeightViews.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/weight_view.h"

namespace ds::testing {

// n values ~ N(0, scale^2) from rng.
inline std::vector<float> randn(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class RandomWeights {
 public:
  explicit RandomWeights(uint32_t seed) : rng_(seed) {}

  std::vector<float> vec(int64_t n, float stddev, float mean = 0.0f) {
    std::normal_distribution<float> d(mean, stddev);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(rng_);
    return v;
  }
  // [rows, cols] ~ N(0, 1/cols), kept alive by this object.
  WeightView f32(int64_t rows, int64_t cols) {
    f32_.push_back(vec(rows * cols, 1.0f / std::sqrt(float(cols))));
    return WeightView{f32_.back().data(), DType::F32, rows, cols};
  }
  WeightView bf16(int64_t rows, int64_t cols) {
    const std::vector<float> v = vec(rows * cols, 1.0f / std::sqrt(float(cols)));
    bf16_.emplace_back(v.size());
    for (size_t i = 0; i < v.size(); ++i) bf16_.back()[i] = f32_to_bf16(v[i]);
    return WeightView{bf16_.back().data(), DType::BF16, rows, cols};
  }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
  std::deque<std::vector<float>> f32_;
  std::deque<std::vector<uint16_t>> bf16_;
};

// The logistic sigmoid in double (for test references).
inline double sig(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// Plain double-accumulating y = x W^T over rows of x (for test references).
inline std::vector<double> ref_linear(const std::vector<double>& x, int64_t T, const WeightView& w) {
  std::vector<double> y(size_t(T * w.rows), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < w.rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < w.cols; ++c) s += x[size_t(t * w.cols + c)] * double(w.at(r, c));
      y[size_t(t * w.rows + r)] = s;
    }
  return y;
}

}  // namespace ds::testing
