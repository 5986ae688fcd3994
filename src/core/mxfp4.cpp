#include "core/mxfp4.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace ds {

namespace {

// E2M1 code -> value; codes 8-15 are the negatives of 0-7 (8 is -0.0).
constexpr std::array<float, 16> kE2m1 = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// The two codes of byte b in element order.
inline uint8_t first_code(uint8_t b) {
  return kMxfp4NibbleOrder == NibbleOrder::LowFirst ? b & 0x0f : b >> 4;
}
inline uint8_t second_code(uint8_t b) {
  return kMxfp4NibbleOrder == NibbleOrder::LowFirst ? b >> 4 : b & 0x0f;
}

void check_sizes(size_t n_packed, size_t n_scales, size_t n) {
  if (n % kMxfp4BlockSize != 0 || n_packed * 2 != n || n_scales * kMxfp4BlockSize != n)
    fail(
        "mxfp4: {} packed bytes and {} scales do not describe {} inputs (need n % 32 == 0, n/2 bytes, n/32 "
        "scales)",
        n_packed, n_scales, n);
}

}  // namespace

float e2m1_to_f32(uint8_t nibble) {
  return kE2m1[nibble & 0x0f];
}

float e8m0_to_f32(uint8_t scale) {
  if (scale == 255) return std::numeric_limits<float>::quiet_NaN();
  // Biased exponent s as an f32 with zero mantissa is exactly 2^(s-127); s = 0 is the subnormal 2^-127.
  const uint32_t bits = scale == 0 ? 0x00400000u : uint32_t(scale) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void mxfp4_decode_row(std::span<const uint8_t> packed, std::span<const uint8_t> scales,
                      std::span<float> out) {
  check_sizes(packed.size(), scales.size(), out.size());
  for (size_t blk = 0; blk < scales.size(); ++blk) {
    const float s = e8m0_to_f32(scales[blk]);
    const uint8_t* p = packed.data() + blk * (kMxfp4BlockSize / 2);
    float* o = out.data() + blk * kMxfp4BlockSize;
    for (int i = 0; i < kMxfp4BlockSize / 2; ++i) {
      o[2 * i] = kE2m1[first_code(p[i])] * s;
      o[2 * i + 1] = kE2m1[second_code(p[i])] * s;
    }
  }
}

float mxfp4_dot_row(std::span<const uint8_t> packed, std::span<const uint8_t> scales,
                    std::span<const float> x) {
  check_sizes(packed.size(), scales.size(), x.size());
  float acc = 0.0f;
  for (size_t blk = 0; blk < scales.size(); ++blk) {
    const uint8_t* p = packed.data() + blk * (kMxfp4BlockSize / 2);
    const float* xb = x.data() + blk * kMxfp4BlockSize;
    float part = 0.0f;
    for (int i = 0; i < kMxfp4BlockSize / 2; ++i)
      part += kE2m1[first_code(p[i])] * xb[2 * i] + kE2m1[second_code(p[i])] * xb[2 * i + 1];
    acc += part * e8m0_to_f32(scales[blk]);
  }
  return acc;
}

}  // namespace ds
