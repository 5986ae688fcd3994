// Index of the largest element of an f32 vector (greedy decoding). Ties: lowest index, like
// torch.argmax on CPU. NaN is never selected unless every element is NaN (then 0).
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace ds {

int64_t argmax(const TensorView& x);  // contiguous f32, at least one element

// out I32 [rows] (contiguous, x's device) = argmax of each row of x f32 [rows, cols] (row view,
// cols >= 1), the same rule: on the device, greedy decoding without copying the logits back.
void argmax_rows(const TensorView& x, const TensorView& out);

}  // namespace ds
