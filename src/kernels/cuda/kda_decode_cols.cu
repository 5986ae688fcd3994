// KDA decode on sm_90, column-per-warp form (K = V = 128, conv size 4): the same function as
// kda_decode.cu's kernel (its plain form), laid out so that nothing after the state arrives waits
// on another warp. One CTA of 128 threads per (sequence, head):
//   - the small per-channel inputs (conv windows and taps, gate, β, gate of the norm) are loaded
//     first, then every 16-byte state load of the thread is issued, then the conv step, gate and
//     L2-norm sums are computed while the state is in flight (one barrier);
//   - warp w owns value columns 32w .. 32w+31; lane (rs = lane / 8, cg = lane % 8) holds rows
//     4i + rs (i = 0..31) of columns 32w + 4cg .. +3, so each load instruction reads four whole
//     128-byte lines, and kᵀS', qᵀS' for a column are finished with two warp shuffles: the update
//     and the 16-byte stores follow without a barrier;
//   - kRegRows of the 32 rows sit in registers, the others are copied to shared memory by cp.async
//     (no registers held while in flight), which lets more CTAs stay resident per multiprocessor;
//   - launched as a programmatic dependent launch (form suffix -pdl), the CTAs may start while the
//     kernel before them on the stream finishes: they load the weights, then wait for it
//     (griddepcontrol.wait) before reading anything it may have written. With kEarly (the caller
//     says that kernel writes none of the slot indices, conv windows and states read here) the
//     state loads are issued before the wait as well, so they overlap that kernel's tail. Each CTA
//     lets the next kernel launch as soon as it starts (griddepcontrol.launch_dependents); both
//     instructions do nothing in a plain launch.
// The arithmetic it shares with the cluster form is in kda_decode_common.cuh.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_decode_common.cuh"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

constexpr int kD = kKdaD, kW = kKdaW, kWl = kKdaWl;

__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}

template <class T, int kRegRows, int kMinCtas, bool kEarly>
__global__ void __launch_bounds__(128, kMinCtas)
    kda_decode_cols_kernel(KdaDecodeLaunch p, int ahead, bool heads_first) {
  constexpr int kShRows = 32 - kRegRows;
  __shared__ float4 rec[kD];  // row r: {α, k̃, q̃, 0}
  __shared__ float k_s[kD];   // k̃
  __shared__ __align__(16) float v_s[kD], o_s[kD];
  __shared__ float red[4][4];
  __shared__ float4 s_sh[kShRows > 0 ? kShRows : 1][128];
  // Item (sequence bi, head h) of this CTA and the linear launch order (x fastest).
  const int64_t lin = int64_t(blockIdx.y) * gridDim.x + blockIdx.x;
  const int bi = heads_first ? blockIdx.y : blockIdx.x, h = heads_first ? blockIdx.x : blockIdx.y;
  const int j = threadIdx.x;
  const int w = j / 32, lane = j % 32, cg = lane % 8, rs = lane / 8;
  const int P = p.H * kD, ch = h * kD + j;

  pdl_trigger();
  // Weights first (taps, gate parameters, norm weight): no kernel of the step writes them.
  float tap[3][kW];
#pragma unroll
  for (int pr = 0; pr < 3; ++pr)
#pragma unroll
    for (int t = 0; t < kW; ++t) tap[pr][t] = p.taps[(int64_t(pr) * P + ch) * kW + t];
  const float dtb = p.dt_bias[ch], a_log = p.a_log[h], on = p.o_norm[j];

  // The slot, its conv windows (channel j of q, k, v) and every state load of this thread: element
  // (row r, column c) at S + r·128 + c, rows kRegRows.. to shared memory by cp.async.
  int slot = 0;
  float* win_base = nullptr;
  float* S = nullptr;
  float win[3][kWl];
  float4 s[kRegRows];
  auto load_state = [&] {
    slot = p.slots[bi];
    win_base = p.conv + int64_t(slot) * p.conv_stride + int64_t(ch) * kWl;
#pragma unroll
    for (int pr = 0; pr < 3; ++pr)
#pragma unroll
      for (int t = 0; t < kWl; ++t) win[pr][t] = win_base[int64_t(pr) * P * kWl + t];
    S = p.pool + int64_t(slot) * p.slot_stride + int64_t(h) * kD * kD + 32 * w + 4 * cg + rs * kD;
#pragma unroll
    for (int i = kRegRows; i < 32; ++i) cp_async16(&s_sh[i - kRegRows][j], S + i * 4 * kD, true);
#pragma unroll
    for (int i = 0; i < kRegRows; ++i) s[i] = *reinterpret_cast<const float4*>(S + i * 4 * kD);
  };
  if constexpr (kEarly) load_state();
  pdl_wait();  // the previous kernel's writes (activations) are visible from here on

  // Activations (channel j of q, k, v), gate inputs; then the state when not loaded above.
  float x[3];
#pragma unroll
  for (int pr = 0; pr < 3; ++pr) x[pr] = load_projection<T>(p, pr, bi, ch);
  const float z = load_act(static_cast<const T*>(p.f), int64_t(bi) * p.f_stride + ch) + dtb;
  const float b_raw = load_act(static_cast<const T*>(p.b), int64_t(bi) * p.b_stride + h);
  if constexpr (!kEarly) load_state();
  // Optional L2 prefetch of the state of the CTA `ahead` places later in launch order (about the
  // one that starts when this one ends): DRAM reads in flight without registers or shared memory.
  const int64_t next = lin + ahead;
  const bool prefetch = ahead > 0 && next < int64_t(p.B) * p.H;
  if (prefetch) {
    const int64_t next_b = heads_first ? next / p.H : next % p.B,
                  next_h = heads_first ? next % p.H : next / p.B;
    const float* sn = p.pool + int64_t(p.slots[next_b]) * p.slot_stride + next_h * kD * kD;
#pragma unroll
    for (int q = 0; q < 4; ++q) prefetch_l2(sn + (q * 128 + j) * 32);  // 512 lines of 128 bytes
  }

  // Conv step (window shifts), SiLU, gate, β; the three sums of the L2 norms.
  float c[3];
#pragma unroll
  for (int pr = 0; pr < 3; ++pr) {
    c[pr] = conv_silu(tap[pr], win[pr], x[pr]);
    conv_shift(win_base + int64_t(pr) * P * kWl, win[pr], x[pr]);
  }
  const float beta = sigmoid(b_raw);
  rec[j] = make_float4(decay_alpha(p, z, a_log), c[1], c[0], 0.0f);
  k_s[j] = c[1], v_s[j] = c[2];
  const QkNorms n = qk_norms(c[0], c[1], red);

  // kᵀS', qᵀS' over this lane's rows, then over the four row groups of the warp.
  if constexpr (kShRows > 0) cp_async_wait_all();  // own copies only: no barrier needed
  float4 pa = make_float4(0, 0, 0, 0), pb = pa;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const float4 rc = rec[4 * i + rs];
    float4& sv = i < kRegRows ? s[i < kRegRows ? i : 0] : s_sh[i < kRegRows ? 0 : i - kRegRows][j];
    decay_and_project(sv, rc, pa, pb);  // S' = Diag(α) S, kept
  }
  row_group_sum(pa, pb);
  const float4 v4 = *reinterpret_cast<const float4*>(&v_s[32 * w + 4 * cg]);
  const auto [o, u] = delta_columns(v4, pa, pb, n, beta, p.scale);

  // S ← S' + k̃ uᵀ, stored as it is formed. k̃ is read as one float per row: reading the float4
  // records again made ptxas hoist all 32 of them and spill.
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const float4 sv = i < kRegRows ? s[i < kRegRows ? i : 0] : s_sh[i < kRegRows ? 0 : i - kRegRows][j];
    *reinterpret_cast<float4*>(S + i * 4 * kD) = fma4(u, k_s[4 * i + rs], sv);
  }

  // Gated RMSNorm output: Σ o² over the 128 columns (row group 0 of each warp holds them).
  float o2 = rs == 0 ? sum_squares(o) : 0.0f;
  o2 = warp_sum(o2);
  if (rs == 0) *reinterpret_cast<float4*>(&o_s[32 * w + 4 * cg]) = o;
  if (lane == 0) red[3][w] = o2;
  const float rg = load_act(static_cast<const T*>(p.r), int64_t(bi) * p.r_stride + ch);
  __syncthreads();
  const float ms = red[3][0] + red[3][1] + red[3][2] + red[3][3];
  const float y = o_s[j] * rsqrtf(ms / kD + p.eps) * on / (1.0f + expf(-rg));
  store_act(static_cast<T*>(p.y), int64_t(bi) * p.y_stride + ch, y);
}

template <class T, int kRegRows, int kMinCtas, bool kEarly>
void launch_form(const KdaDecodeLaunch& l, const KdaDecodeForm& form) {
  const auto kernel = kda_decode_cols_kernel<T, kRegRows, kMinCtas, kEarly>;
  if constexpr (kRegRows < 32) {  // room for kMinCtas × 36 KiB of shared memory per multiprocessor
    static const cudaError_t carveout = cudaFuncSetAttribute(
        kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    check(carveout, "kda_decode: shared memory carveout");
  }
  // CTAs resident on the whole device; asked only by the prefetch forms (first use may be inside a
  // graph capture).
  auto resident = [kernel] {
    static const int n = [kernel] {
      int per_sm = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 128, 0);
      return multiprocessor_count() * per_sm;
    }();
    return n;
  };
  const bool hf = form.heads_first && l.B <= 65535;  // grid y limit
  const dim3 grid = hf ? dim3{unsigned(l.H), unsigned(l.B)} : dim3{unsigned(l.B), unsigned(l.H)};
  const int ahead = form.prefetch ? resident() : 0;
  launch_kda_decode_kernel(kernel, grid, l, form.pdl, "kda_decode (columns) kernel", ahead, hf);
}

template <class T>
void launch_typed(const KdaDecodeLaunch& l, const KdaDecodeForm& form) {
  if (form.smem_ctas == 4) return launch_form<T, 16, 4, false>(l, form);
  if (form.smem_ctas == 5) return launch_form<T, 16, 5, false>(l, form);
  // State loads before the wait only where the caller allows it and the launch is programmatic.
  if (form.pdl && l.overlap_prior_kernel && l.stream != nullptr) return launch_form<T, 32, 3, true>(l, form);
  return launch_form<T, 32, 3, false>(l, form);
}

}  // namespace

bool kda_decode_cols_supported(const KdaDecodeLaunch& l) {
  return l.W == kW;
}

void launch_kda_decode_cols(const KdaDecodeLaunch& l, const KdaDecodeForm& form) {
  if (l.B == 0) return;
  if (l.bf16)
    launch_typed<__nv_bfloat16>(l, form);
  else
    launch_typed<float>(l, form);
}

}  // namespace ds::cuda
