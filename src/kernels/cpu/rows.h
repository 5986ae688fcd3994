// CPU implementations of kernels/elementwise.h and kernels/gather.h (f32 math, plain loops; the
// references of the CUDA kernels). Arguments are validated by the dispatchers.
#pragma once

#include "core/tensor_view.h"
#include "core/weight_view.h"

namespace ds::cpu {

void cast_rows(const TensorView& x, const TensorView& y);
void add_rows(const TensorView& x, const TensorView& y);
void mul_sigmoid_rows(const TensorView& g, const TensorView& y);
void situ_mul_rows(const TensorView& gate, const TensorView& up, const TensorView& y, float beta,
                   float linear_beta);
void embedding_rows(const WeightView& table, const TensorView& ids, const TensorView& out);
void gather_rows(const TensorView& src, const TensorView& idx, const TensorView& dst);
void weighted_combine_rows(const TensorView& rows, const TensorView& pos, const TensorView& weight,
                           const TensorView& out);

}  // namespace ds::cpu
