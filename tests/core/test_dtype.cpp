// DType: names round-trip, f32 -> bf16 rounds to nearest even, f16 round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.h"

using namespace ds;

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::U8}) {
    DType back;
    ASSERT_TRUE(dtype_from_name(dtype_name(t), &back));
    EXPECT_EQ(back, t);
  }
  DType out;
  EXPECT_FALSE(dtype_from_name("F4", &out));
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-2.5f)), -2.5f);
  // 1 + 2^-8 is halfway between two bf16 values: ties to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16RoundTrip) {
  for (float v : {0.0f, 1.0f, -3.25f, 65504.0f, 6.0e-5f, 1e-7f}) {
    float back = f16_to_f32(f32_to_f16(v));
    EXPECT_NEAR(back, v, std::fabs(v) * 1e-3 + 6e-8) << v;
  }
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
}
