// MXFP4 expert GEMM: equals the GEMM on its dense expansion; bad shapes throw.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/mxfp4_linear.h"
#include "kernels/expert_linear.h"

using namespace ds;

namespace {

// The E2M1 code table written out by hand (sign = bit 3).
const float kCode[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// Random MXFP4 matrix [rows, cols] and its exact f32 expansion.
struct RandomMxfp4 {
  std::vector<uint8_t> packed, scale;
  std::vector<float> dense;
  Mxfp4View view;
  RandomMxfp4(std::mt19937& rng, int64_t rows, int64_t cols) {
    std::uniform_int_distribution<int> byte(0, 255), sc(120, 130);
    packed.resize(size_t(rows * cols / 2));
    scale.resize(size_t(rows * cols / 32));
    for (auto& b : packed) b = uint8_t(byte(rng));
    for (auto& s : scale) s = uint8_t(sc(rng));
    dense.resize(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t b = packed[size_t(r * cols / 2 + c / 2)];
        const uint8_t nib = (c % 2 == 0) ? (b & 0xf) : (b >> 4);
        dense[size_t(r * cols + c)] =
            kCode[nib] * std::ldexp(1.0f, int(scale[size_t(r * cols / 32 + c / 32)]) - 127);
      }
    view = {packed.data(), scale.data(), rows, cols};
  }
};

}  // namespace

// Decoding itself (every code in both nibble positions, E8M0 scales, nibble order) is tested
// against core/mxfp4.h in tests/model/test_mxfp4.cpp; here: the expert GEMM built on it.

TEST(K3Mxfp4, ExpertGemmEqualsDenseExpansion) {
  std::mt19937 rng(31);
  const int64_t rows = 150, cols = 96;  // rows not a multiple of the panel height
  RandomMxfp4 m(rng, rows, cols);
  ExpertLinear q;
  q.mxfp4 = m.view;
  q.validate("test");
  const WeightView dense{m.dense.data(), DType::F32, rows, cols};
  std::normal_distribution<float> nd;
  for (int64_t T : {1, 3, 40}) {  // GEMV and GEMM paths
    std::vector<float> x(size_t(T * cols)), got(size_t(T * rows)), want(size_t(T * rows));
    for (float& v : x) v = nd(rng);
    expert_linear(f32_rows(x.data(), T, q.cols()), q, f32_rows(got.data(), T, q.rows()));
    cpu::linear_ref(x.data(), T, dense, want.data());
    // f32 accumulation bound: a few ulps of Σ|w||x| per output.
    for (int64_t t = 0; t < T; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        double mag = 0;
        for (int64_t c = 0; c < cols; ++c)
          mag += std::fabs(m.dense[size_t(r * cols + c)] * x[size_t(t * cols + c)]);
        const size_t i = size_t(t * rows + r);
        ASSERT_NEAR(got[i], want[i], 1e-6 * mag + 1e-7) << "T " << T << " row " << r;
      }
  }
  std::vector<float> rowbuf(size_t(2 * cols));
  cpu::mxfp4_rows_to_f32(m.view, 7, 2, rowbuf.data());
  for (int64_t c = 0; c < 2 * cols; ++c) EXPECT_EQ(rowbuf[size_t(c)], m.dense[size_t(7 * cols + c)]);
}

TEST(K3Mxfp4, BadShapesThrow) {
  std::vector<uint8_t> b(16), s(1);
  ExpertLinear q;
  q.mxfp4 = {b.data(), s.data(), 1, 30};  // cols not a multiple of 32
  EXPECT_THROW(q.validate("w1"), Error);
  q.mxfp4 = {b.data(), nullptr, 1, 32};
  EXPECT_THROW(q.validate("w1"), Error);
}
