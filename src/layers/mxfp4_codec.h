// MXFP4 (OCP MX FP4, compressed-tensors `mxfp4-pack-quantized`) row decoding used by the expert GEMM:
// E2M1 nibbles, two per byte, one E8M0 power-of-two scale per 32 consecutive inputs (model-spec §8).
// Owns the nibble order and the E8M0 rule; the loader's own decoder (src/model) must agree with it.
#pragma once

#include <cstdint>

namespace ds {

// Nibble order: element 2i in the low nibble, 2i+1 in the high nibble (compressed-tensors packing,
// model-spec §8; not confirmed on K3 bytes — this constant is the single place to flip it).
inline constexpr bool kMxfp4LowNibbleFirst = true;

// E2M1 magnitude of a 4-bit code (bit 3 = sign): {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
float mxfp4_e2m1(uint8_t nibble);

// E8M0 scale byte -> 2^(s - 127); 255 is NaN (OCP MX v1.0).
float mxfp4_e8m0(uint8_t s);

// One row of `cols` values (cols % 32 == 0): packed u8 [cols/2], scale u8 [cols/32] -> out f32 [cols].
void mxfp4_decode_row(const uint8_t* packed, const uint8_t* scale, int64_t cols, float* out);

}  // namespace ds
