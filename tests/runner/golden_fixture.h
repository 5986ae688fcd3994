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

// Typed copy of one tensor of a golden file; a missing tensor throws, a wrong dtype fails the test.
template <typename T>
std::vector<T> golden_tensor(const SafetensorsFile& file, const std::string& name, DType want) {
  const TensorRef* t = file.find(name);
  if (!t) throw std::runtime_error("golden tensor missing: " + name + " in " + file.path());
  EXPECT_EQ(t->dtype, want) << name;
  std::vector<T> v(size_t(t->numel()));
  std::memcpy(v.data(), t->data, v.size() * sizeof(T));
  return v;
}

inline std::vector<float> golden_f32(const std::string& name) {
  return golden_tensor<float>(golden(), name, DType::F32);
}

inline std::vector<int32_t> golden_i32(const std::string& name) {
  return golden_tensor<int32_t>(golden(), name, DType::I32);
}

// Asserts every element is within atol + rtol*|expected|; names the worst index and values.
inline void expect_close(const float* actual, const float* expected, size_t n, float atol, float rtol,
                         const std::string& what) {
  size_t bad = 0, worst = 0;
  double worst_excess = -1e30, max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(actual[i]) - double(expected[i]));
    const double excess = d - (atol + rtol * std::fabs(double(expected[i])));
    max_abs = std::max(max_abs, d);
    if (!(excess <= 0)) ++bad;
    if (excess > worst_excess || std::isnan(d)) worst_excess = excess, worst = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements out of tolerance; worst at " << worst
                     << ": actual " << actual[worst] << " expected " << expected[worst] << " (max |diff| "
                     << max_abs << ")";
  std::printf("    max |diff| %-32s %.3g\n", what.c_str(), max_abs);
}

inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, float atol,
                         float rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  expect_close(actual.data(), expected.data(), actual.size(), atol, rtol, what);
}

// The fixtures' `batch` case: rows left-padded to S with mask 1 = real token, logits [rows, S, V]
// zeroed at padded positions. Runs the rows UNPADDED as sequences of different lengths in one
// forward and checks every valid position at the logits tolerance; returns the sequence states.
inline std::vector<SequenceState> check_unpadded_batch(const ModelRunner& r, const std::vector<int32_t>& ids,
                                                       const std::vector<int32_t>& mask,
                                                       const std::vector<float>& expected, int64_t n_rows,
                                                       const std::string& label) {
  const int64_t V = r.config().vocab_size, S = int64_t(ids.size()) / n_rows;
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(n_rows));
  std::vector<SequenceState> states;
  for (int64_t i = 0; i < n_rows; ++i) {
    for (int64_t t = 0; t < S; ++t)
      if (mask[size_t(i * S + t)]) rows[size_t(i)].push_back(ids[size_t(i * S + t)]);
    states.push_back(r.new_sequence());
  }
  ForwardBatch b;
  for (int64_t i = 0; i < n_rows; ++i)
    b.seqs.push_back({rows[size_t(i)], &states[size_t(i)], LogitsWant::All, {}});
  const ForwardResult out = r.forward(b);
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t n = int64_t(rows[size_t(i)].size()), pad = S - n;
    for (int64_t t = 0; t < pad * V; ++t) EXPECT_EQ(expected[size_t(i * S * V + t)], 0.0f) << label;
    expect_close(out.logits[size_t(i)].data(), expected.data() + (i * S + pad) * V, size_t(n * V), kLogitAtol,
                 kLogitRtol, label + ".row" + std::to_string(i));
  }
  return states;
}

}  // namespace ds::testing
