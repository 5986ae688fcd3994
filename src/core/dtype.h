// Element types of tensors on disk and in memory, their sizes, and scalar conversions
// (bf16/f16 <-> f32). Conversions are exact for bf16->f32 and round-to-nearest-even for f32->bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace ds {

enum class DType : uint8_t { F32, BF16, F16, I32, I64, U8, I8, F8_E4M3 };

size_t dtype_size(DType t);                               // bytes per element
std::string_view dtype_name(DType t);                     // safetensors spelling: "F32", "BF16", ...
bool dtype_from_name(std::string_view name, DType* out);  // false if unknown

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

}  // namespace ds
