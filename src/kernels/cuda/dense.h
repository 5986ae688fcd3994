// CUDA implementations of the dense kernels (kernels/linear.h, norm.h, activation.h): linear through
// cuBLASLt (f32 accumulation; bf16 x bf16 or f32 x f32), RMSNorm, the gated sigmoid RMSNorm, the
// row L2 norm and the SiLU/GLU activations over f32 or bf16 rows. Arguments are validated by the
// dispatchers; all run on the default stream.
#pragma once

#include "core/tensor_view.h"
#include "core/weight_view.h"

namespace ds::cuda {

void linear(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate);
// Strided-batched linear: head h reads x + h*x_stride, w + h*w_stride, writes y + h*y_stride.
void linear_heads(const TensorView& x, const WeightView& w, const TensorView& y, int64_t heads,
                  int64_t x_stride, int64_t w_stride, int64_t y_stride, bool accumulate);
// The same with W's rows w_ld elements apart (a column slice of a wider matrix); heads >= 1.
void linear_heads_ld(const TensorView& x, const WeightView& w, int64_t w_ld, const TensorView& y,
                     int64_t heads, int64_t x_stride, int64_t w_stride, int64_t y_stride);
void rmsnorm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y);
void rmsnorm_gated_sigmoid(const TensorView& x, const TensorView& gate, const TensorView& weight, float eps,
                           const TensorView& y);
void l2norm_rows(const TensorView& x, float eps);
void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y);
void sigmoid(const TensorView& x, const TensorView& y);
void silu(const TensorView& x, const TensorView& y);

}  // namespace ds::cuda
