// Row-wise kernels of the device forward: dtype cast, residual add, sigmoid gate, SiTU-GLU, embedding
// and row gathers, the MoE weighted combine, MXFP4 dequantisation. Plain grid-stride loops, f32 math.
// The decode step's (cast, add, SiTU, embedding, gather, argmax) are launched with PDL (pdl.cuh): each
// waits for the kernel before, then lets the next one launch.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/expert_act.cuh"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/mxfp4.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/uniform_hash.h"

namespace ds::cuda {
namespace {

unsigned grid_for(int64_t n, int threads = 256) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

#define DS_GRID_STRIDE(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__device__ __forceinline__ float sigmoid_dev(float x) {
  return 1.0f / (1.0f + expf(-x));
}

template <class X, class Y>
__global__ void cast_kernel(const X* x, int64_t xs, Y* y, int64_t ys, int64_t rows, int64_t cols) {
  pdl_wait();
  pdl_trigger();
  DS_GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    store_act(y, r * ys + c, load_act(x, r * xs + c));
  }
}

// f32 -> bf16 with 4 columns per thread (16-byte loads, 8-byte stores; the same rounding as
// cast_kernel): cols, strides multiples of 4, x 16-byte and y 8-byte aligned. Rows over blockIdx.y.
__global__ void cast_f32_bf16_x4_kernel(const float* x, int64_t xs, __nv_bfloat16* y, int64_t ys,
                                        int64_t rows, int cols4) {
  pdl_wait();
  pdl_trigger();
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (int c = int(blockIdx.x * blockDim.x + threadIdx.x); c < cols4; c += int(gridDim.x * blockDim.x)) {
      const float4 v = *reinterpret_cast<const float4*>(x + r * xs + 4 * c);
      __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
      *reinterpret_cast<uint2*>(y + r * ys + 4 * c) =
          make_uint2(*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
    }
}

__global__ void binary_kernel(BinaryOp op, const float* x, int64_t xs, float* y, int64_t ys, int64_t rows,
                              int64_t cols) {
  pdl_wait();
  pdl_trigger();
  DS_GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    const float a = x[r * xs + c];
    float& b = y[r * ys + c];
    b = op == BinaryOp::Add ? b + a : b * sigmoid_dev(a);
  }
}

__global__ void situ_kernel(const float* a, int64_t as, const float* b, int64_t bs, float* y, int64_t ys,
                            int64_t rows, int64_t cols, float beta, float lbeta) {
  pdl_wait();
  pdl_trigger();
  DS_GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    y[r * ys + c] = situ_glu(a[r * as + c], b[r * bs + c], beta, lbeta);
  }
}

template <class W>
__global__ void embedding_kernel(const W* table, int64_t D, const int32_t* ids, int64_t T, float* out,
                                 int64_t os) {
  pdl_wait();
  pdl_trigger();
  DS_GRID_STRIDE(i, T * D) {
    const int64_t t = i / D, c = i % D;
    out[t * os + c] = load_act(table, int64_t(ids[t]) * D + c);
  }
}

__global__ void gather_kernel(const float* src, int64_t ss, const int32_t* idx, int64_t n, int64_t C,
                              float* dst, int64_t ds) {
  pdl_wait();
  pdl_trigger();
  DS_GRID_STRIDE(i, n * C) {
    const int64_t r = i / C, c = i % C;
    dst[r * ds + c] = src[int64_t(idx[r]) * ss + c];
  }
}

__global__ void combine_kernel(const float* rows, int64_t rs, const int32_t* pos, const float* w, int64_t T,
                               int64_t k, int64_t C, float* out, int64_t os) {
  DS_GRID_STRIDE(i, T * C) {
    const int64_t t = i / C, c = i % C;
    float acc = 0.0f;
    for (int64_t j = 0; j < k; ++j) acc += w[t * k + j] * rows[int64_t(pos[t * k + j]) * rs + c];
    out[t * os + c] = acc;
  }
}

// The same sums over 4 columns per thread (16-byte loads and stores), one output row per blockIdx.y: no
// 64-bit division per element. Needs C, rs and os multiples of 4 and 16-byte aligned rows.
__global__ void combine4_kernel(const float* __restrict__ rows, int64_t rs, const int32_t* __restrict__ pos,
                                const float* __restrict__ w, int k, int C, float* __restrict__ out,
                                int64_t os) {
  const int t = blockIdx.y, c = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= C) return;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int j = 0; j < k; ++j) {
    const float wj = w[int64_t(t) * k + j];
    const float4 v = *reinterpret_cast<const float4*>(rows + int64_t(pos[int64_t(t) * k + j]) * rs + c);
    acc.x += wj * v.x, acc.y += wj * v.y, acc.z += wj * v.z, acc.w += wj * v.w;
  }
  *reinterpret_cast<float4*>(out + int64_t(t) * os + c) = acc;
}

template <class Out>
__global__ void mxfp4_kernel(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols,
                             Out* out) {
  const int64_t half = cols / 2;
  DS_GRID_STRIDE(i, rows * half) {
    const int64_t r = i / half, b = i % half;
    const uint8_t byte = packed[r * half + b];
    const float s = e8m0_value(scale[r * (cols / 32) + (2 * b) / 32]);
    store_act(out, r * cols + 2 * b, e2m1_value(mxfp4_code(byte, 0)) * s);
    store_act(out, r * cols + 2 * b + 1, e2m1_value(mxfp4_code(byte, 1)) * s);
  }
}

template <class T>
__global__ void fill_kernel(T* x, int64_t n, uint64_t seed, float scale, float offset) {
  DS_GRID_STRIDE(i, n) store_act(x, i, __fadd_rn(offset, __fmul_rn(scale, uniform_hash(seed, uint64_t(i)))));
}

// One CTA (256 threads) per row.
// (value, index) a beats b: larger value, or the same value at a lower index; index -1 = none.
__device__ __forceinline__ bool arg_better(float av, int64_t ai, float bv, int64_t bi) {
  return ai >= 0 && (bi < 0 || av > bv || (av == bv && ai < bi));
}

// Block-wide best of (bv, bi) (256 threads); the result in thread 0.
__device__ __forceinline__ void block_argmax(float& bv, int64_t& bi) {
  __shared__ float sv[8];
  __shared__ int64_t si[8];
  for (int o = 16; o > 0; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (arg_better(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  if (threadIdx.x % 32 == 0) sv[threadIdx.x / 32] = bv, si[threadIdx.x / 32] = bi;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < 8; ++w)
      if (arg_better(sv[w], si[w], bv, bi)) bv = sv[w], bi = si[w];
}

// Stage 1: CTA (r, part) finds the best of its slice of columns of row r (NaN skipped).
constexpr int kArgmaxParts = 64;
__global__ void __launch_bounds__(256)
    argmax_part_kernel(const float* x, int64_t stride, int64_t cols, float* part_v, int64_t* part_i) {
  pdl_wait();
  pdl_trigger();
  const float* row = x + blockIdx.x * stride;
  const int64_t per = (cols + gridDim.y - 1) / gridDim.y, c0 = blockIdx.y * per,
                c1 = c0 + per < cols ? c0 + per : cols;
  float bv = 0.0f;
  int64_t bi = -1;
  for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
    const float v = row[c];
    if (v == v && (bi < 0 || v > bv)) bv = v, bi = c;  // strided ascending: ties keep the lower index
  }
  block_argmax(bv, bi);
  if (threadIdx.x == 0)
    part_v[blockIdx.x * gridDim.y + blockIdx.y] = bv, part_i[blockIdx.x * gridDim.y + blockIdx.y] = bi;
}

// Stage 2: one CTA per row over its parts.
__global__ void __launch_bounds__(256)
    argmax_merge_kernel(const float* part_v, const int64_t* part_i, int parts, int32_t* out) {
  pdl_wait();
  pdl_trigger();
  float bv = 0.0f;
  int64_t bi = -1;
  for (int p = threadIdx.x; p < parts; p += blockDim.x) {
    const float v = part_v[blockIdx.x * parts + p];
    const int64_t i = part_i[blockIdx.x * parts + p];
    if (arg_better(v, i, bv, bi)) bv = v, bi = i;
  }
  block_argmax(bv, bi);
  if (threadIdx.x == 0) out[blockIdx.x] = int32_t(bi < 0 ? 0 : bi);
}

}  // namespace

void launch_fill_uniform(void* x, bool bf16, int64_t n, uint64_t seed, float scale, float offset) {
  if (bf16)
    fill_kernel<<<grid_for(n), 256>>>(static_cast<__nv_bfloat16*>(x), n, seed, scale, offset);
  else
    fill_kernel<<<grid_for(n), 256>>>(static_cast<float*>(x), n, seed, scale, offset);
  check_launch("fill kernel");
}

void launch_argmax_rows(const float* x, int64_t stride, int64_t rows, int64_t cols, int32_t* out) {
  if (rows == 0) return;
  // Long rows (the vocabulary) over several CTAs per row, then one merge per row.
  const int parts = int(cols >= 256 * 64 ? kArgmaxParts : 1);
  auto* part_v = static_cast<float*>(alloc_device(rows * parts * int64_t(sizeof(float))));
  auto* part_i = static_cast<int64_t*>(alloc_device(rows * parts * int64_t(sizeof(int64_t))));
  launch_pdl(argmax_part_kernel, dim3(unsigned(rows), unsigned(parts)), dim3(256), 0, x, stride, cols, part_v,
             part_i);
  check_launch("argmax kernel");
  launch_pdl(argmax_merge_kernel, dim3(unsigned(rows)), dim3(256), 0, part_v, part_i, parts, out);
  check_launch("argmax merge kernel");
  free_device(part_v);
  free_device(part_i);
}

void launch_cast_rows(const void* x, bool x_bf16, int64_t xs, void* y, bool y_bf16, int64_t ys, int64_t rows,
                      int64_t cols) {
  if (rows * cols == 0) return;
  const dim3 g(grid_for(rows * cols)), b(256);
  using B = __nv_bfloat16;
  if (x_bf16 && y_bf16)
    launch_pdl(cast_kernel<B, B>, g, b, 0, static_cast<const B*>(x), xs, static_cast<B*>(y), ys, rows, cols);
  else if (x_bf16)
    launch_pdl(cast_kernel<B, float>, g, b, 0, static_cast<const B*>(x), xs, static_cast<float*>(y), ys, rows,
               cols);
  else if (y_bf16 && cols % 4 == 0 && xs % 4 == 0 && ys % 4 == 0 &&
           reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0 &&
           cols / 4 <= 0x7fffffff) {
    const int64_t cols4 = cols / 4, bx = (cols4 + 255) / 256;
    launch_pdl(cast_f32_bf16_x4_kernel,
               dim3(unsigned(bx < 8 ? bx : 8), unsigned(rows < 65535 ? rows : 65535)), b, 0,
               static_cast<const float*>(x), xs, static_cast<B*>(y), ys, rows, int(cols4));
  } else if (y_bf16)
    launch_pdl(cast_kernel<float, B>, g, b, 0, static_cast<const float*>(x), xs, static_cast<B*>(y), ys, rows,
               cols);
  else
    launch_pdl(cast_kernel<float, float>, g, b, 0, static_cast<const float*>(x), xs, static_cast<float*>(y),
               ys, rows, cols);
  check_launch("cast_rows kernel");
}

void launch_binary_rows(BinaryOp op, const float* x, int64_t xs, float* y, int64_t ys, int64_t rows,
                        int64_t cols) {
  if (rows * cols == 0) return;
  launch_pdl(binary_kernel, dim3(grid_for(rows * cols)), dim3(256), 0, op, x, xs, y, ys, rows, cols);
  check_launch("binary rows kernel");
}

void launch_situ_mul(const float* a, int64_t as, const float* b, int64_t bs, float* y, int64_t ys,
                     int64_t rows, int64_t cols, float beta, float linear_beta) {
  if (rows * cols == 0) return;
  launch_pdl(situ_kernel, dim3(grid_for(rows * cols)), dim3(256), 0, a, as, b, bs, y, ys, rows, cols, beta,
             linear_beta);
  check_launch("situ kernel");
}

void launch_embedding(const void* table, bool bf16, int64_t D, const int32_t* ids, int64_t T, float* out,
                      int64_t os) {
  if (T * D == 0) return;
  const dim3 g(grid_for(T * D)), b(256);
  if (bf16)
    launch_pdl(embedding_kernel<__nv_bfloat16>, g, b, 0, static_cast<const __nv_bfloat16*>(table), D, ids, T,
               out, os);
  else
    launch_pdl(embedding_kernel<float>, g, b, 0, static_cast<const float*>(table), D, ids, T, out, os);
  check_launch("embedding kernel");
}

void launch_gather_rows(const float* src, int64_t ss, const int32_t* idx, int64_t n, int64_t C, float* dst,
                        int64_t ds) {
  if (n * C == 0) return;
  launch_pdl(gather_kernel, dim3(grid_for(n * C)), dim3(256), 0, src, ss, idx, n, C, dst, ds);
  check_launch("gather kernel");
}

void launch_weighted_combine(const float* rows, int64_t rs, const int32_t* pos, const float* w, int64_t T,
                             int64_t k, int64_t C, float* out, int64_t os) {
  if (T * C == 0) return;
  const bool aligned = (reinterpret_cast<uintptr_t>(rows) | reinterpret_cast<uintptr_t>(out)) % 16 == 0;
  if (aligned && C % 4 == 0 && rs % 4 == 0 && os % 4 == 0 && T <= 65535 && C <= (int64_t(1) << 30)) {
    constexpr int kThreads = 128;
    const dim3 grid(unsigned((C / 4 + kThreads - 1) / kThreads), unsigned(T));
    combine4_kernel<<<grid, kThreads>>>(rows, rs, pos, w, int(k), int(C), out, os);
    return check_launch("combine4 kernel");
  }
  combine_kernel<<<grid_for(T * C), 256>>>(rows, rs, pos, w, T, k, C, out, os);
  check_launch("combine kernel");
}

void launch_mxfp4_dequant(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, void* out,
                          bool bf16) {
  if (rows * cols == 0) return;
  if (bf16)
    mxfp4_kernel<<<grid_for(rows * cols / 2), 256>>>(packed, scale, rows, cols,
                                                     static_cast<__nv_bfloat16*>(out));
  else
    mxfp4_kernel<<<grid_for(rows * cols / 2), 256>>>(packed, scale, rows, cols, static_cast<float*>(out));
  check_launch("mxfp4 dequant kernel");
}

}  // namespace ds::cuda
