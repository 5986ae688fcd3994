#pragma once
// Reading one element of a bf16 or f32 array as f32 (the plain reference loops' weight access).

#include <cstdint>

#include "core/dtype.h"

namespace ds {

// Element i of a bf16 array when dt is BF16, else of an f32 array.
inline float bf16_or_f32_at(const void* base, DType dt, int64_t i) {
  return dt == DType::BF16 ? bf16_to_f32(static_cast<const uint16_t*>(base)[i])
                           : static_cast<const float*>(base)[i];
}

}  // namespace ds
