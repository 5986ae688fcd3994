// Test helpers for the kimi-linear-tiny golden fixture (tests/golden/kimi-linear-tiny): the model
// loaded once per test binary, typed reads of golden.safetensors, and the manifest's tolerance
// check |actual - expected| <= atol + rtol * |expected| that reports the worst element.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "runner/model_runner.h"

namespace ds::testing {

inline const std::string kTinyDir = DS_TEST_DATA_DIR "/golden/kimi-linear-tiny";

// manifest.json suggested_tolerances (float32 implementation).
inline constexpr float kLogitAtol = 1e-4f, kLogitRtol = 1e-4f;
inline constexpr float kStateAtol = 1e-5f, kStateRtol = 1e-4f;

inline const ModelRunner& tiny_runner() {
  static std::unique_ptr<ModelRunner> r = ModelRunner::load(kTinyDir);
  return *r;
}

inline const SafetensorsFile& golden() {
  static std::unique_ptr<SafetensorsFile> f = SafetensorsFile::open(kTinyDir + "/golden.safetensors");
  return *f;
}

inline const TensorRef& golden_ref(const std::string& name) {
  const TensorRef* t = golden().find(name);
  if (!t) throw std::runtime_error("golden tensor missing: " + name);
  return *t;
}

inline std::vector<float> golden_f32(const std::string& name) {
  const TensorRef& t = golden_ref(name);
  EXPECT_EQ(t.dtype, DType::F32) << name;
  std::vector<float> v(size_t(t.numel()));
  std::memcpy(v.data(), t.data, v.size() * 4);
  return v;
}

inline std::vector<int32_t> golden_i32(const std::string& name) {
  const TensorRef& t = golden_ref(name);
  EXPECT_EQ(t.dtype, DType::I32) << name;
  std::vector<int32_t> v(size_t(t.numel()));
  std::memcpy(v.data(), t.data, v.size() * 4);
  return v;
}

// Asserts every element is within atol + rtol*|expected|; names the worst index and values.
inline void expect_close(const float* actual, const float* expected, size_t n, float atol,
                         float rtol, const std::string& what) {
  size_t bad = 0, worst = 0;
  double worst_excess = -1e30, max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(actual[i]) - double(expected[i]));
    const double excess = d - (atol + rtol * std::fabs(double(expected[i])));
    max_abs = std::max(max_abs, d);
    if (!(excess <= 0)) ++bad;
    if (excess > worst_excess || std::isnan(d)) worst_excess = excess, worst = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements out of tolerance; worst at "
                     << worst << ": actual " << actual[worst] << " expected " << expected[worst]
                     << " (max |diff| " << max_abs << ")";
  std::printf("    max |diff| %-32s %.3g\n", what.c_str(), max_abs);
}

inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                         float atol, float rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  expect_close(actual.data(), expected.data(), actual.size(), atol, rtol, what);
}

}  // namespace ds::testing
