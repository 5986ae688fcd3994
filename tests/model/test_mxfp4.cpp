// MXFP4 decoding: every E2M1 code and E8M0 scale, low-nibble-first order, overflow/NaN, dot == decode.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/mxfp4.h"
#include "model/weights.h"
#include "model_test_util.h"

namespace ds {
namespace {

// Independent expectation: E2M1 = sign bit 3, exponent bits 2-1, mantissa bit 0 (OCP MX spec).
float e2m1_by_bits(int code) {
  const int e = (code >> 1) & 3, m = code & 1;
  const float mag = e == 0 ? 0.5f * float(m) : std::ldexp(1.0f + 0.5f * float(m), e - 1);
  return (code & 8) ? -mag : mag;
}

TEST(Mxfp4, E2m1EveryCode) {
  const float expect[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(e2m1_to_f32(uint8_t(c)), expect[c]) << c;
    EXPECT_EQ(e2m1_to_f32(uint8_t(c)), e2m1_by_bits(c)) << c;
    EXPECT_EQ(e2m1_to_f32(uint8_t(c | 0xf0)), expect[c]) << "high bits ignored, code " << c;
  }
  EXPECT_TRUE(std::signbit(e2m1_to_f32(8)));
}

TEST(Mxfp4, E8m0Scales) {
  EXPECT_EQ(e8m0_to_f32(127), 1.0f);
  EXPECT_EQ(e8m0_to_f32(128), 2.0f);
  EXPECT_EQ(e8m0_to_f32(126), 0.5f);
  EXPECT_EQ(e8m0_to_f32(100), std::ldexp(1.0f, -27));
  EXPECT_EQ(e8m0_to_f32(200), std::ldexp(1.0f, 73));
  EXPECT_EQ(e8m0_to_f32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0_to_f32(0), std::ldexp(1.0f, -127));  // subnormal, exact
  EXPECT_GT(e8m0_to_f32(0), 0.0f);
  EXPECT_EQ(e8m0_to_f32(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(e8m0_to_f32(255)));
}

TEST(Mxfp4, NibbleOrderIsLowFirst) {
  static_assert(kMxfp4NibbleOrder == NibbleOrder::LowFirst);
  std::vector<uint8_t> packed(16, 0);
  packed[0] = 0x21;   // element 0 = code 1 (0.5), element 1 = code 2 (1.0)
  packed[15] = 0x9f;  // element 30 = code 15 (-6), element 31 = code 9 (-0.5)
  const std::vector<uint8_t> scale{127};
  std::vector<float> out(32);
  mxfp4_decode_row(packed, scale, out);
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[30], -6.0f);
  EXPECT_EQ(out[31], -0.5f);
}

// Every block holds every code in both nibble positions: byte i = (low i, high 15 - i).
TEST(Mxfp4, EveryCodeBothPositionsScalesFarFrom127) {
  // Last six: the scales of the former layers-side decoder test (254: 6 * 2^127 overflows to -inf/inf).
  const std::vector<uint8_t> scales{127, 147, 97, 1, 0, 250, 30, 100, 126, 128, 140, 200, 254};
  const size_t n = scales.size() * 32;
  std::vector<uint8_t> packed(n / 2);
  for (size_t b = 0; b < packed.size(); ++b) {
    const int i = int(b % 16);
    packed[b] = uint8_t(i | ((15 - i) << 4));
  }
  std::vector<float> out(n);
  mxfp4_decode_row(packed, scales, out);
  for (size_t blk = 0; blk < scales.size(); ++blk) {
    const double s = std::ldexp(1.0, int(scales[blk]) - 127);
    for (int i = 0; i < 16; ++i) {
      const size_t lo = blk * 32 + size_t(2 * i), hi = lo + 1;
      EXPECT_EQ(out[lo], float(double(e2m1_by_bits(i)) * s)) << "block " << blk << " low code " << i;
      EXPECT_EQ(out[hi], float(double(e2m1_by_bits(15 - i)) * s))
          << "block " << blk << " high code " << 15 - i;
    }
  }
  // Spot values written out: block 1 (2^20) code 7 -> 6 * 2^20; block 4 (2^-127) code 1 -> 2^-128.
  EXPECT_EQ(out[32 + 14], 6.0f * 1048576.0f);
  EXPECT_EQ(out[4 * 32 + 2], std::ldexp(1.0f, -128));
  EXPECT_EQ(out[6 * 32 + 1], -6.0f * std::ldexp(1.0f, -97));  // byte 0 high nibble = code 15
}

TEST(Mxfp4, OverflowAndNanScale) {
  std::vector<uint8_t> packed(16, 0x27);  // codes 7 (6.0) and 2 (1.0)
  std::vector<float> out(32);
  mxfp4_decode_row(packed, std::vector<uint8_t>{254}, out);
  EXPECT_TRUE(std::isinf(out[0]));  // 6 * 2^127 exceeds f32
  EXPECT_EQ(out[1], std::ldexp(1.0f, 127));
  mxfp4_decode_row(packed, std::vector<uint8_t>{255}, out);
  EXPECT_TRUE(std::isnan(out[1]));
}

TEST(Mxfp4, SizeMismatchIsAnError) {
  std::vector<uint8_t> packed(16), scales(2);
  std::vector<float> out(32);
  test::expect_error([&] { mxfp4_decode_row(packed, scales, out); },
                     {"16 packed bytes", "2 scales", "32 inputs"});
  std::vector<float> odd(30);
  test::expect_error([&] { mxfp4_decode_row(std::vector<uint8_t>(15), std::vector<uint8_t>(1), odd); },
                     {"30 inputs"});
}

TEST(Mxfp4, DotRowMatchesDecode) {
  const std::vector<uint8_t> scales{120, 131};
  std::vector<uint8_t> packed(32);
  std::vector<float> x(64);
  for (size_t i = 0; i < packed.size(); ++i) packed[i] = uint8_t(i * 37 + 11);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.25f;
  std::vector<float> w(64);
  mxfp4_decode_row(packed, scales, w);
  double expect = 0;
  for (size_t i = 0; i < 64; ++i) expect += double(w[i]) * double(x[i]);
  EXPECT_NEAR(mxfp4_dot_row(packed, scales, x), expect, 1e-6 * std::max(1.0, std::fabs(expect)));
}

TEST(Mxfp4, DecodesRowOfLinearWeight) {
  // [2, 64] weight: row 1 holds codes 0..15 repeated, scales 2^3 and 2^-3.
  std::vector<uint8_t> packed(2 * 32, 0), scales{127, 127, 130, 124};
  for (int i = 0; i < 32; ++i) packed[size_t(32 + i)] = uint8_t((2 * i) % 16 | (((2 * i + 1) % 16) << 4));
  LinearWeight lw;
  lw.out = 2;
  lw.in = 64;
  lw.weight = {"w.weight_packed", DType::U8, {2, 32}, packed.data(), packed.size()};
  lw.scale = TensorRef{"w.weight_scale", DType::U8, {2, 2}, scales.data(), scales.size()};
  std::vector<float> row(64);
  mxfp4_decode_row(lw, 1, row);
  for (int j = 0; j < 64; ++j)
    EXPECT_EQ(row[size_t(j)], e2m1_by_bits(j % 16) * (j < 32 ? 8.0f : 0.125f)) << j;
  test::expect_error([&] { mxfp4_decode_row(lw, 2, row); }, {"row 2", "w.weight_packed"});
  LinearWeight dense;
  dense.weight.name = "d.weight";
  test::expect_error([&] { mxfp4_decode_row(dense, 0, row); }, {"`d.weight` is not MXFP4"});
}

}  // namespace
}  // namespace ds
