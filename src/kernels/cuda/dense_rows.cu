// Row-wise kernels on f32 or bf16 rows: RMSNorm, gated sigmoid RMSNorm (KDA o_norm), row L2 norm
// (one CTA of 128 threads per row, f32 reductions) and the elementwise SiLU/sigmoid/GLU product.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dense_launch.h"

namespace ds::cuda {
namespace {

__device__ float block_sum(float v) {
  __shared__ float red[32];
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) s += red[w];
  return s;
}

__device__ __forceinline__ float sigmoidf_dev(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// One CTA per row.
template <class T, RowOp kOp>
__global__ void __launch_bounds__(128) norm_kernel(RowsArg a) {
  const int64_t r = blockIdx.x;
  const T* x = static_cast<const T*>(a.x) + r * a.x_stride;
  T* y = static_cast<T*>(a.y) + r * a.y_stride;
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < a.dim; c += blockDim.x) {
    const float v = load_act(x, c);
    ss += v * v;
  }
  const float total = block_sum(ss);
  const float inv = kOp == RowOp::L2Norm ? rsqrtf(total + a.eps) : rsqrtf(total / float(a.dim) + a.eps);
  const T* gate = static_cast<const T*>(a.gate) + r * a.gate_stride;
  for (int64_t c = threadIdx.x; c < a.dim; c += blockDim.x) {
    float v = load_act(x, c) * inv;
    if (kOp != RowOp::L2Norm && a.weight) v *= a.weight[c];
    if (kOp == RowOp::RmsNormGatedSigmoid) v *= sigmoidf_dev(load_act(gate, c));
    store_act(y, c, v);
  }
}

template <class T, RowOp kOp>
__global__ void elementwise_kernel(RowsArg a) {
  const int64_t n = a.rows * a.dim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / a.dim, c = i % a.dim;
    const float x = load_act(static_cast<const T*>(a.x), r * a.x_stride + c);
    float v;
    if constexpr (kOp == RowOp::SiluMul)
      v = x * sigmoidf_dev(x) * load_act(static_cast<const T*>(a.gate), r * a.gate_stride + c);
    else if constexpr (kOp == RowOp::Silu)
      v = x * sigmoidf_dev(x);
    else
      v = sigmoidf_dev(x);
    store_act(static_cast<T*>(a.y), r * a.y_stride + c, v);
  }
}

template <class T, RowOp kOp>
void launch_one(const RowsArg& a) {
  if constexpr (kOp == RowOp::RmsNorm || kOp == RowOp::RmsNormGatedSigmoid || kOp == RowOp::L2Norm) {
    norm_kernel<T, kOp><<<unsigned(a.rows), 128>>>(a);
  } else {
    const int64_t n = a.rows * a.dim;
    elementwise_kernel<T, kOp><<<unsigned(n / 256 + 1 < 65536 ? n / 256 + 1 : 65536), 256>>>(a);
  }
}

template <class T>
void launch_typed(RowOp op, const RowsArg& a) {
  if (a.rows == 0 || a.dim == 0) return;
  using Launch = void (*)(const RowsArg&);
  constexpr Launch kTable[] = {&launch_one<T, RowOp::RmsNorm>, &launch_one<T, RowOp::RmsNormGatedSigmoid>,
                               &launch_one<T, RowOp::L2Norm>,  &launch_one<T, RowOp::SiluMul>,
                               &launch_one<T, RowOp::Sigmoid>, &launch_one<T, RowOp::Silu>};
  kTable[int(op)](a);
  check_launch("row kernel");
}

}  // namespace

void launch_rows(RowOp op, const RowsArg& a) {
  if (a.bf16)
    launch_typed<__nv_bfloat16>(op, a);
  else
    launch_typed<float>(op, a);
}

}  // namespace ds::cuda
