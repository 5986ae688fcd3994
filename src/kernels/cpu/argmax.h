// Index of the largest element of an f32 vector (greedy decoding). Ties: lowest index, like
// torch.argmax on CPU. NaN is never selected unless every element is NaN (then 0).
#pragma once

#include <cstdint>

namespace ds::cpu {

int64_t argmax(const float* x, int64_t n);  // n >= 1

}  // namespace ds::cpu
