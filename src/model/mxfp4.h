// MXFP4 rows of a checkpoint LinearWeight (the format itself is decoded by core/mxfp4.h).
#pragma once

#include <cstdint>
#include <span>

#include "core/mxfp4.h"

namespace ds {

struct LinearWeight;

// Row `row` of an MXFP4 LinearWeight (weight_packed [out, in/2], weight_scale [out, in/32]) -> out f32 [in].
void mxfp4_decode_row(const LinearWeight& w, int64_t row, std::span<float> out);

}  // namespace ds
