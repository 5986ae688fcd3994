// linear(): GEMV and GEMM paths, F32 and BF16 weights, awkward shapes, strided/accumulating
// forms and argument errors, all against the double-accumulating linear_ref.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/cpu/linear.h"
#include "test_util.h"

namespace ds::cpu {
namespace {

struct Weights {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  WeightView view(DType dt, int64_t rows, int64_t cols) const {
    return {dt == DType::BF16 ? static_cast<const void*>(bf16.data()) : f32.data(), dt, rows, cols};
  }
};

Weights make_weights(int64_t rows, int64_t cols, uint32_t seed) {
  Weights w;
  w.f32 = test::randn(size_t(rows * cols), seed, 0.05f);
  for (float x : w.f32) w.bf16.push_back(f32_to_bf16(x));
  return w;
}

// f32 accumulation over `cols` terms of size ~|x||w|: relative 1e-5 is loose enough for the
// ordering differences and far below any real bug.
constexpr double kAtol = 1e-5, kRtol = 1e-5;

TEST(Linear, AllPathsMatchReferenceOnAwkwardShapes) {
  const int64_t shapes[][2] = {{1, 1}, {7, 3}, {33, 17}, {129, 250}, {200, 1000}};
  for (auto [rows, cols] : shapes) {
    Weights w = make_weights(rows, cols, uint32_t(rows * 31 + cols));
    for (DType dt : {DType::F32, DType::BF16}) {
      const WeightView wv = w.view(dt, rows, cols);
      for (int64_t T : {1, 3, 5, 16, 17, 65}) {
        SCOPED_TRACE(testing::Message()
                     << "rows=" << rows << " cols=" << cols << " T=" << T << " dtype=" << dtype_name(dt));
        const auto x = test::randn(size_t(T * cols), uint32_t(T));
        std::vector<float> ref(size_t(T * rows)), y(ref.size()), yv(ref.size()), ym(ref.size());
        linear_ref(x.data(), T, wv, ref.data());
        linear(x.data(), T, wv, y.data());
        linear_gemv(x.data(), T, wv, yv.data());
        linear_gemm(x.data(), T, wv, ym.data());
        EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), ref.size(), kAtol, kRtol), 1.0);
        EXPECT_LE(test::max_scaled_err(yv.data(), ref.data(), ref.size(), kAtol, kRtol), 1.0);
        EXPECT_LE(test::max_scaled_err(ym.data(), ref.data(), ref.size(), kAtol, kRtol), 1.0);
      }
    }
  }
}

// Shapes beyond one GEMM block: inputs > 1024 (several input blocks accumulated into y) and more
// than 128 tokens (several token blocks), strided and accumulating.
TEST(Linear, GemmSpansSeveralBlocks) {
  const int64_t rows = 37, cols = 2100, T = 300, xs = cols + 3, ys = rows + 2;
  Weights w = make_weights(rows, cols, 11);
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const WeightView wv = w.view(dt, rows, cols);
    const auto xbig = test::randn(size_t(T * xs), 12);
    std::vector<float> x(size_t(T * cols));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < cols; ++c) x[size_t(t * cols + c)] = xbig[size_t(t * xs + c)];
    std::vector<float> ref(size_t(T * rows)), y(size_t(T * ys), 0.25f);
    linear_ref(x.data(), T, wv, ref.data());
    for (float& r : ref) r += 0.25f;
    linear_strided(xbig.data(), xs, T, wv, y.data(), ys, /*accumulate=*/true);
    for (int64_t t = 0; t < T; ++t) {
      EXPECT_LE(test::max_scaled_err(y.data() + t * ys, ref.data() + t * rows, size_t(rows), kAtol, kRtol),
                1.0)
          << "row " << t;
      EXPECT_EQ(y[size_t(t * ys + rows)], 0.25f);  // padding untouched
    }
  }
}

// linear_batch: jobs of different shapes, dtypes and paths (GEMV and GEMM), strided and
// accumulating, in one call, each equal to its own reference.
TEST(Linear, BatchRunsEveryJobAsLinear) {
  struct Shape {
    int64_t rows, cols, T;
    DType dt;
    bool acc;
  };
  // Together above the threading threshold, so the threads split every job.
  const Shape shapes[] = {{37, 50, 1, DType::BF16, false},   {64, 33, 5, DType::F32, true},
                          {5, 17, 16, DType::BF16, true},    {130, 70, 17, DType::BF16, false},
                          {3, 9, 0, DType::F32, false},      {29, 100, 40, DType::F32, true},
                          {300, 1000, 3, DType::BF16, false}};
  std::vector<Weights> ws;
  std::vector<std::vector<float>> xs, ys, refs;
  std::vector<LinearJob> jobs;
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const Shape& sh = shapes[i];
    ws.push_back(make_weights(sh.rows, sh.cols, uint32_t(40 + i)));
    xs.push_back(test::randn(size_t(sh.T * (sh.cols + 1)), uint32_t(50 + i)));
    ys.emplace_back(size_t(sh.T * (sh.rows + 2)), 0.5f);
  }
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const Shape& sh = shapes[i];
    jobs.push_back({xs[i].data(), sh.cols + 1, sh.T, ws[i].view(sh.dt, sh.rows, sh.cols), ys[i].data(),
                    sh.rows + 2, sh.acc});
  }
  linear_batch(jobs);
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const Shape& sh = shapes[i];
    SCOPED_TRACE(i);
    std::vector<float> x(size_t(sh.T * sh.cols)), ref(size_t(sh.T * sh.rows));
    for (int64_t t = 0; t < sh.T; ++t)
      for (int64_t c = 0; c < sh.cols; ++c) x[size_t(t * sh.cols + c)] = xs[i][size_t(t * (sh.cols + 1) + c)];
    linear_ref(x.data(), sh.T, ws[i].view(sh.dt, sh.rows, sh.cols), ref.data());
    for (int64_t t = 0; t < sh.T; ++t)
      for (int64_t r = 0; r < sh.rows + 2; ++r) {
        const float got = ys[i][size_t(t * (sh.rows + 2) + r)];
        if (r >= sh.rows) {
          EXPECT_EQ(got, 0.5f);  // padding untouched
        } else {
          const float want = ref[size_t(t * sh.rows + r)] + (sh.acc ? 0.5f : 0.0f);
          EXPECT_NEAR(got, want, kAtol + kRtol * std::fabs(want)) << "t " << t << " r " << r;
        }
      }
  }
}

TEST(Linear, Bf16WeightsAreUpcastExactly) {
  // One weight row of bf16-representable values times a one-hot x picks the value exactly.
  std::vector<uint16_t> w{f32_to_bf16(1.5f), f32_to_bf16(-0.0078125f), f32_to_bf16(3.0e5f)};
  const WeightView wv{w.data(), DType::BF16, 3, 1};
  std::vector<float> x{1.0f}, y(3);
  linear(x.data(), 1, wv, y.data());
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -0.0078125f);
  EXPECT_EQ(y[2], bf16_to_f32(f32_to_bf16(3.0e5f)));
}

TEST(Linear, StridedAndAccumulate) {
  const int64_t rows = 21, cols = 37, T = 20;
  Weights w = make_weights(rows, cols, 3);
  for (DType dt : {DType::F32, DType::BF16}) {
    const WeightView wv = w.view(dt, rows, cols);
    for (int64_t t_rows : {int64_t(2), int64_t(12), T}) {  // GEMV and GEMM paths
      const int64_t xs = cols + 5, ys = rows + 3;
      const auto xbig = test::randn(size_t(t_rows * xs), 8);
      std::vector<float> x(size_t(t_rows * cols));
      for (int64_t t = 0; t < t_rows; ++t)
        for (int64_t c = 0; c < cols; ++c) x[size_t(t * cols + c)] = xbig[size_t(t * xs + c)];
      std::vector<float> ref(size_t(t_rows * rows));
      linear_ref(x.data(), t_rows, wv, ref.data());
      std::vector<float> y(size_t(t_rows * ys), 0.5f);
      linear_strided(xbig.data(), xs, t_rows, wv, y.data(), ys, /*accumulate=*/true);
      for (int64_t t = 0; t < t_rows; ++t) {
        for (int64_t r = 0; r < rows; ++r)
          EXPECT_NEAR(y[size_t(t * ys + r)], ref[size_t(t * rows + r)] + 0.5f, 2e-5);
        for (int64_t r = rows; r < ys; ++r) EXPECT_EQ(y[size_t(t * ys + r)], 0.5f);  // untouched
      }
    }
  }
}

TEST(Linear, ZeroRowsIsANoOp) {
  Weights w = make_weights(4, 4, 1);
  float y = 7.0f;
  linear(nullptr, 0, w.view(DType::F32, 4, 4), &y);
  EXPECT_EQ(y, 7.0f);
}

TEST(Linear, RejectsBadWeights) {
  std::vector<float> x(4), y(4);
  std::vector<uint16_t> raw(16);
  EXPECT_THROW(linear(x.data(), 1, WeightView{raw.data(), DType::F16, 4, 4}, y.data()), Error);
  EXPECT_THROW(linear(x.data(), 1, WeightView{nullptr, DType::F32, 4, 4}, y.data()), Error);
  EXPECT_THROW(linear(x.data(), 1, WeightView{raw.data(), DType::BF16, 0, 4}, y.data()), Error);
}

}  // namespace
}  // namespace ds::cpu
