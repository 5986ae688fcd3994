// Index of the largest element of an f32 vector (greedy decoding). Ties: lowest index, like
// torch.argmax on CPU. NaN is never selected unless every element is NaN (then 0).
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace ds {

int64_t argmax(const TensorView& x);  // contiguous f32, at least one element

}  // namespace ds
