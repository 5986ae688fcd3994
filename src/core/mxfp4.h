// MXFP4 decoding (OCP Microscaling FP4, stored as compressed-tensors `mxfp4-pack-quantized`):
// E2M1 values packed two per byte plus one E8M0 scale byte per block of 32 inputs. Pure data
// decoding (u8 packed + u8 scales -> f32), used by the routed-expert GEMMs to dequantize on the fly.
// Owns the nibble order and the value tables; nothing here allocates. Lives in core because both
// the checkpoint loader (model/) and the expert GEMM kernels (kernels/) decode it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ds {

inline constexpr int kMxfp4BlockSize = 32;  // inputs sharing one E8M0 scale

enum class NibbleOrder : uint8_t {
  LowFirst,   // element 2i in bits 0-3 of byte i, element 2i+1 in bits 4-7
  HighFirst,  // element 2i in bits 4-7
};

// Evidence (read, not copied): compressed-tensors `fp4_quantized.py` (neuralmagic/compressed-tensors
// @0d6640b) registers MXFP4PackedCompressor as an alias of the NVFP4 packer, whose
// pack_fp4_to_uint8 computes `idx[:, 0] | (idx[:, 1] << 4)` over consecutive pairs of a row and
// whose unpack_fp4_from_uint8 emits (low, high) per byte; bit 3 of a nibble is the sign and bits
// 0-2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}. Third-party K3 ports use the same convention, not yet
// verified on K3 bytes: if real K3 weights disagree, flip this one constant.
inline constexpr NibbleOrder kMxfp4NibbleOrder = NibbleOrder::LowFirst;

// E2M1 nibble (low 4 bits used) -> f32: sign bit 3, magnitude index bits 0-2.
float e2m1_to_f32(uint8_t nibble);

// E8M0 scale byte -> 2^(s - 127), exact (s = 0 gives the subnormal 2^-127); 255 is NaN (OCP MX spec).
// compressed-tensors `convert_mxfp4_exp_scale` uses the same 2^(s - 127).
float e8m0_to_f32(uint8_t scale);

// Decodes one row of n inputs: packed u8 [n/2], scales u8 [n/32] -> out f32 [n]; n % 32 == 0.
// Products overflow to ±inf only for scales >= 254 with large codes (as f32 arithmetic does).
// Throws ds::Error when the spans disagree in size.
void mxfp4_decode_row(std::span<const uint8_t> packed, std::span<const uint8_t> scales, std::span<float> out);

// Dot product of one MXFP4 row with x f32 [n], decoding on the fly (f32 accumulation per block).
float mxfp4_dot_row(std::span<const uint8_t> packed, std::span<const uint8_t> scales,
                    std::span<const float> x);

}  // namespace ds
