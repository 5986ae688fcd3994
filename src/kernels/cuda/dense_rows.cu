// Row-wise kernels on f32 or bf16 rows: RMSNorm, gated sigmoid RMSNorm (KDA o_norm), row L2 norm
// (one CTA of 128 threads per row, f32 reductions) and the elementwise SiLU/sigmoid/GLU product.
// All launched with PDL (pdl.cuh): each waits for the kernel before, then lets the next one launch.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dense_launch.h"
#include "kernels/cuda/pdl.cuh"

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
  pdl_wait();
  pdl_trigger();
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

// The same for f32 rows of 512 to kSmallVecs * 4 * 128 columns (dim % 4 == 0, 16-byte aligned): every
// load of the row (and of the weight and gate) issued before the reduction, the row kept in registers.
// Decode steps' single rows: one pass of latency instead of one per 128 columns.
constexpr int kSmallVecs = 8;
template <RowOp kOp>
__global__ void __launch_bounds__(128) norm_small_kernel(RowsArg a) {
  pdl_wait();
  pdl_trigger();
  const int64_t r = blockIdx.x;
  const float4* x = reinterpret_cast<const float4*>(static_cast<const float*>(a.x) + r * a.x_stride);
  float4* y = reinterpret_cast<float4*>(static_cast<float*>(a.y) + r * a.y_stride);
  const int n4 = int(a.dim / 4);
  float4 v[kSmallVecs], wv[kSmallVecs], gv[kSmallVecs];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j) {
    const int c = int(threadIdx.x) + 128 * j;
    v[j] = c < n4 ? x[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (kOp != RowOp::L2Norm && a.weight && c < n4) wv[j] = reinterpret_cast<const float4*>(a.weight)[c];
    if (kOp == RowOp::RmsNormGatedSigmoid && c < n4)
      gv[j] = reinterpret_cast<const float4*>(static_cast<const float*>(a.gate) + r * a.gate_stride)[c];
  }
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j)
    ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
  const float total = block_sum(ss);
  const float inv = kOp == RowOp::L2Norm ? rsqrtf(total + a.eps) : rsqrtf(total / float(a.dim) + a.eps);
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j) {
    const int c = int(threadIdx.x) + 128 * j;
    if (c >= n4) break;
    float4 o = make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
    if (kOp != RowOp::L2Norm && a.weight) o.x *= wv[j].x, o.y *= wv[j].y, o.z *= wv[j].z, o.w *= wv[j].w;
    if (kOp == RowOp::RmsNormGatedSigmoid) {
      o.x *= sigmoidf_dev(gv[j].x), o.y *= sigmoidf_dev(gv[j].y);
      o.z *= sigmoidf_dev(gv[j].z), o.w *= sigmoidf_dev(gv[j].w);
    }
    y[c] = o;
  }
}

// x += r, then y = rmsnorm(x) · weight: the same register-resident row, the updated x written back.
// Launched with PDL (pdl.cuh): the norm weight is loaded before the wait for the kernel that wrote r,
// and the next kernel may launch once the wait has passed.
__global__ void __launch_bounds__(128) add_rmsnorm_kernel(AddNormArg a) {
  const int64_t row = blockIdx.x;
  const int n4 = int(a.dim / 4);
  float4 v[kSmallVecs], wv[kSmallVecs];
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j) {
    const int c = int(threadIdx.x) + 128 * j;
    wv[j] = a.weight && c < n4 ? reinterpret_cast<const float4*>(a.weight)[c]
                               : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
  }
  pdl_wait();
  pdl_trigger();
  const float4* r = reinterpret_cast<const float4*>(a.r + row * a.r_stride);
  float4* x = reinterpret_cast<float4*>(a.x + row * a.x_stride);
  float4* y = reinterpret_cast<float4*>(a.y + row * a.y_stride);
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j) {
    const int c = int(threadIdx.x) + 128 * j;
    v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (c < n4) {
      const float4 xv = x[c], rv = r[c];
      v[j] = make_float4(xv.x + rv.x, xv.y + rv.y, xv.z + rv.z, xv.w + rv.w);
    }
  }
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j)
    ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
  const float inv = rsqrtf(block_sum(ss) / float(a.dim) + a.eps);
#pragma unroll
  for (int j = 0; j < kSmallVecs; ++j) {
    const int c = int(threadIdx.x) + 128 * j;
    if (c >= n4) break;
    x[c] = v[j];
    y[c] = make_float4(v[j].x * inv * wv[j].x, v[j].y * inv * wv[j].y, v[j].z * inv * wv[j].z,
                       v[j].w * inv * wv[j].w);
  }
}

// f32 rows of 128, 256, 384 or 512 columns (e.g. KDA's per-head o_norm over T * H rows): a warp per
// row, 8 rows per CTA, shuffles only.
constexpr int kWarpVecs = 4;
template <RowOp kOp>
__global__ void __launch_bounds__(256) norm_warp_kernel(RowsArg a) {
  pdl_wait();
  pdl_trigger();
  const int64_t r = int64_t(blockIdx.x) * 8 + threadIdx.x / 32;
  if (r >= a.rows) return;
  const int lane = threadIdx.x % 32, n4 = int(a.dim / 4);
  const float4* x = reinterpret_cast<const float4*>(static_cast<const float*>(a.x) + r * a.x_stride);
  float4* y = reinterpret_cast<float4*>(static_cast<float*>(a.y) + r * a.y_stride);
  float4 v[kWarpVecs], gv[kWarpVecs];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kWarpVecs; ++j) {
    const int c = lane + 32 * j;
    if (c < n4) {
      v[j] = x[c];
      if (kOp == RowOp::RmsNormGatedSigmoid)
        gv[j] = reinterpret_cast<const float4*>(static_cast<const float*>(a.gate) + r * a.gate_stride)[c];
      ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float inv = kOp == RowOp::L2Norm ? rsqrtf(ss + a.eps) : rsqrtf(ss / float(a.dim) + a.eps);
#pragma unroll
  for (int j = 0; j < kWarpVecs; ++j) {
    const int c = lane + 32 * j;
    if (c >= n4) break;
    float4 o = make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
    if (kOp != RowOp::L2Norm && a.weight) {
      const float4 w = reinterpret_cast<const float4*>(a.weight)[c];
      o.x *= w.x, o.y *= w.y, o.z *= w.z, o.w *= w.w;
    }
    if (kOp == RowOp::RmsNormGatedSigmoid) {
      o.x *= sigmoidf_dev(gv[j].x), o.y *= sigmoidf_dev(gv[j].y);
      o.z *= sigmoidf_dev(gv[j].z), o.w *= sigmoidf_dev(gv[j].w);
    }
    y[c] = o;
  }
}

bool aligned_rows(const RowsArg& a) {
  auto al = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return a.x_stride % 4 == 0 && a.y_stride % 4 == 0 && a.gate_stride % 4 == 0 && al(a.x) && al(a.y) &&
         al(a.weight) && al(a.gate);
}

bool warp_row_fits(const RowsArg& a) {
  return a.dim % 128 == 0 && a.dim <= 128 * kWarpVecs && aligned_rows(a);
}

bool small_row_fits(const RowsArg& a) {
  auto al = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  // From 512 columns (every thread busy) up to what the registers hold.
  return a.dim % 4 == 0 && a.dim >= 512 && a.dim <= int64_t(kSmallVecs) * 4 * 128 && a.x_stride % 4 == 0 &&
         a.y_stride % 4 == 0 && a.gate_stride % 4 == 0 && al(a.x) && al(a.y) && al(a.weight) && al(a.gate);
}

template <class T, RowOp kOp>
__global__ void elementwise_kernel(RowsArg a) {
  pdl_wait();
  pdl_trigger();
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
    if constexpr (std::is_same_v<T, float>) {
      if (warp_row_fits(a))
        return launch_pdl(norm_warp_kernel<kOp>, dim3(unsigned((a.rows + 7) / 8)), dim3(256), 0, a);
      if (small_row_fits(a))
        return launch_pdl(norm_small_kernel<kOp>, dim3(unsigned(a.rows)), dim3(128), 0, a);
    }
    launch_pdl(norm_kernel<T, kOp>, dim3(unsigned(a.rows)), dim3(128), 0, a);
  } else {
    const int64_t n = a.rows * a.dim;
    launch_pdl(elementwise_kernel<T, kOp>, dim3(unsigned(n / 256 + 1 < 65536 ? n / 256 + 1 : 65536)),
               dim3(256), 0, a);
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

bool launch_add_rmsnorm(const AddNormArg& a) {
  auto al = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (a.dim % 4 != 0 || a.dim > int64_t(kSmallVecs) * 4 * 128 || a.r_stride % 4 != 0 || a.x_stride % 4 != 0 ||
      a.y_stride % 4 != 0 || !al(a.r) || !al(a.x) || !al(a.y) || !al(a.weight))
    return false;
  if (a.rows > 0) launch_pdl(add_rmsnorm_kernel, dim3(unsigned(a.rows)), dim3(128), 0, a);
  return true;
}

void launch_rows(RowOp op, const RowsArg& a) {
  if (a.bf16)
    launch_typed<__nv_bfloat16>(op, a);
  else
    launch_typed<float>(op, a);
}

}  // namespace ds::cuda
