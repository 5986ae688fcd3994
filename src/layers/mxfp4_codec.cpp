#include "layers/mxfp4_codec.h"

#include <cmath>

namespace ds {

float mxfp4_e2m1(uint8_t nibble) {
  static constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMag[nibble & 7u];
  return (nibble & 8u) ? -m : m;
}

float mxfp4_e8m0(uint8_t s) {
  return s == 255 ? NAN : std::ldexp(1.0f, int(s) - 127);
}

void mxfp4_decode_row(const uint8_t* packed, const uint8_t* scale, int64_t cols, float* out) {
  for (int64_t g = 0; g < cols / 32; ++g) {
    const float sc = mxfp4_e8m0(scale[g]);
    for (int64_t i = 0; i < 16; ++i) {
      const uint8_t b = packed[g * 16 + i];
      const uint8_t lo = b & 0x0fu, hi = b >> 4;
      out[g * 32 + 2 * i] = mxfp4_e2m1(kMxfp4LowNibbleFirst ? lo : hi) * sc;
      out[g * 32 + 2 * i + 1] = mxfp4_e2m1(kMxfp4LowNibbleFirst ? hi : lo) * sc;
    }
  }
}

}  // namespace ds
