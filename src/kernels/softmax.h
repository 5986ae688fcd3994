// Row-wise numerically stable softmax over f32 [rows, dim] (one interface for every device).
#pragma once

#include "core/tensor_view.h"

namespace ds {

// y = softmax(x) per row; in place (x == y) allowed. dim >= 1.
void softmax_rows(const TensorView& x, const TensorView& y);

}  // namespace ds
