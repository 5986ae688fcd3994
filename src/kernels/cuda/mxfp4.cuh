// Internal to src/kernels/cuda: MXFP4 decoding on the device, bit for bit core/mxfp4's (E2M1 code ×
// E8M0 scale in f32 arithmetic; codes low nibble first), for the kernels that read packed experts.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ds::cuda {

// E2M1 code (low 4 bits: sign bit 3, magnitude index bits 0-2 into {0, 0.5, 1, 1.5, 2, 3, 4, 6}) -> f32
// without a table: for magnitude index m >= 2, (m << 22) is an f32 with exponent m >> 1 and the
// mantissa's top bit m & 1, and 126 more in the exponent makes it 2^((m >> 1) - 1) · (1 + (m & 1) / 2).
__device__ __forceinline__ float e2m1_value(uint32_t code) {
  const uint32_t m = code & 7u;
  const uint32_t bits = m >= 2u ? (m << 22) + (126u << 23) : (m == 1u ? 0x3f000000u : 0u);
  return __uint_as_float(bits | ((code & 8u) << 28));
}

// E8M0 scale byte -> 2^(s - 127); s = 0 is the f32 subnormal 2^-127, 255 is NaN.
__device__ __forceinline__ float e8m0_value(uint32_t s) {
  if (s == 255u) return __uint_as_float(0x7fc00000u);
  return __uint_as_float(s == 0u ? 0x00400000u : s << 23);
}

// Element i (0-7) of a 32-bit word of packed codes (element 2b in the low nibble of byte b).
__device__ __forceinline__ uint32_t mxfp4_code(uint32_t word, int i) {
  return (word >> (4 * i)) & 15u;
}

}  // namespace ds::cuda
