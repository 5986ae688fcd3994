// Row-wise numerically stable softmax over f32 [rows, dim] (max-subtracted, f32 sums).
#pragma once

#include <cstdint>

namespace ds::cpu {

// y = softmax(x) per row; in place (x == y) allowed. dim >= 1.
void softmax_rows(const float* x, int64_t rows, int64_t dim, float* y);

}  // namespace ds::cpu
