// KDA decode on sm_90, cluster form (K = V = 128, conv size 4): the same function as the column form
// (kda_decode_cols.cu), each (sequence, head) spread over a cluster of 4 CTAs so that a small batch
// fills the GPU (batch 1 of 32 heads: 128 CTAs instead of 32). CTA `rank` of the cluster owns value
// columns 32·rank .. 32·rank+31 of the head's state, a 128 × 32 f32 slice (16 KB) it reads and writes
// once:
//   - every CTA runs the short-conv step of the whole 128-wide q and k (cheap), the L2 norms, the
//     gate and β, and the conv step of its 32 channels of v;
//   - warp w holds rows 32w .. 32w+31 of the slice, lane (rs = lane / 8, cg = lane % 8) rows
//     32w + 4i + rs (i = 0..7) of columns 4cg .. 4cg+3, so each load reads four whole 128-byte lines;
//     kᵀS', qᵀS' for a column are summed over the warp's row groups by shuffles and over the 4 warps
//     through shared memory (one barrier);
//   - the gated RMSNorm needs Σo² over the head's 128 columns: each CTA pushes its partial sum into
//     slot `rank` of every CTA's shared array (distributed shared memory, after a cluster barrier
//     that every CTA of the cluster has started), arrives on a second cluster barrier, stores its
//     state slice, then waits on it and normalises its 32 outputs;
//   - the q and k conv windows are read by all 4 CTAs: CTA `rank` writes channels 32·rank ..
//     32·rank+31 of them only after that second barrier, which each CTA arrives on after its reads.
// PDL as in the column form (kda_decode_common.cuh, kda_decode_cols.cu): the CTAs trigger at once,
// load the weights, then wait; with kEarly the slot, windows and state loads come before the wait.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_decode_common.cuh"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

constexpr int kD = kKdaD, kW = kKdaW, kWl = kKdaWl;
constexpr int kRanks = 4, kCols = kD / kRanks;  // CTAs per cluster, value columns per CTA
constexpr int kRows = 8;                        // state float4s per thread

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Split cluster barrier: every thread of the cluster arrives, then waits for all the others.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive() {  // release: this thread's earlier accesses
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {  // acquire: the arrived threads' accesses
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Stores x at the address of `local` in the shared memory of CTA `rank` of the cluster.
__device__ __forceinline__ void store_cluster(float* local, unsigned rank, float x) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(a), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(remote), "f"(x) : "memory");
}

template <class T, bool kEarly>
__global__ void __cluster_dims__(kRanks, 1, 1) __launch_bounds__(128)
    kda_decode_cluster_kernel(KdaDecodeLaunch p) {
  __shared__ float4 rec[kD];  // row r: {α, k̃, q̃, 0}
  __shared__ float k_s[kD];   // k̃
  __shared__ __align__(16) float v_s[kCols];
  __shared__ float4 ka_s[4][kCols / 4], qa_s[4][kCols / 4];  // per warp: k̃ᵀS', q̃ᵀS' over its rows
  __shared__ float red[3][4];
  __shared__ float o2_s[kRanks];  // Σo² over the 32 columns of each CTA of the cluster
  const unsigned rank = cluster_rank();
  const int item = blockIdx.x / kRanks;  // the heads of one sequence are adjacent
  const int bi = item / p.H, h = item % p.H;
  const int j = threadIdx.x;
  const int w = j / 32, lane = j % 32, cg = lane % 8, rs = lane / 8;
  const int P = p.H * kD, ch = h * kD + j;                    // q / k channel of this thread
  const int col0 = kCols * rank, vch = h * kD + col0 + lane;  // v channel (warp 0)

  pdl_trigger();
  cluster_arrive_relaxed();  // the wait before the first remote store needs every CTA started
  // Weights first (taps, gate parameters, norm weight): no kernel of the step writes them.
  float tap[3][kW];
#pragma unroll
  for (int pr = 0; pr < 2; ++pr)
#pragma unroll
    for (int t = 0; t < kW; ++t) tap[pr][t] = p.taps[(int64_t(pr) * P + ch) * kW + t];
  if (w == 0)
#pragma unroll
    for (int t = 0; t < kW; ++t) tap[2][t] = p.taps[(int64_t(2) * P + vch) * kW + t];
  const float dtb = p.dt_bias[ch], a_log = p.a_log[h];

  // The slot, the conv windows (channel j of q and k; channel vch of v in warp 0) and the state
  // loads of this thread: element (row r, column c) at S + r·128 + c.
  float* conv = nullptr;
  float* S = nullptr;
  float win[3][kWl];
  float4 s[kRows];
  auto load_state = [&] {
    const int slot = p.slots[bi];
    conv = p.conv + int64_t(slot) * p.conv_stride;
#pragma unroll
    for (int pr = 0; pr < 2; ++pr)
#pragma unroll
      for (int t = 0; t < kWl; ++t) win[pr][t] = conv[(int64_t(pr) * P + ch) * kWl + t];
    if (w == 0)
#pragma unroll
      for (int t = 0; t < kWl; ++t) win[2][t] = conv[(int64_t(2) * P + vch) * kWl + t];
    S = p.pool + int64_t(slot) * p.slot_stride + int64_t(h) * kD * kD + (32 * w + rs) * kD + col0 + 4 * cg;
#pragma unroll
    for (int i = 0; i < kRows; ++i) s[i] = *reinterpret_cast<const float4*>(S + i * 4 * kD);
  };
  if constexpr (kEarly) load_state();
  pdl_wait();  // the previous kernel's writes (activations) are visible from here on

  float x[3];
#pragma unroll
  for (int pr = 0; pr < 2; ++pr) x[pr] = load_projection<T>(p, pr, bi, ch);
  if (w == 0) x[2] = load_projection<T>(p, 2, bi, vch);
  const float z = load_act(static_cast<const T*>(p.f), int64_t(bi) * p.f_stride + ch) + dtb;
  const float b_raw = load_act(static_cast<const T*>(p.b), int64_t(bi) * p.b_stride + h);
  if constexpr (!kEarly) load_state();

  // Conv step of q, k (windows written at the end) and of this CTA's v channels (its own), gate, β,
  // norms.
  const float cq = conv_silu(tap[0], win[0], x[0]), ck = conv_silu(tap[1], win[1], x[1]);
  if (w == 0) {
    v_s[lane] = conv_silu(tap[2], win[2], x[2]);
    conv_shift(conv + (int64_t(2) * P + vch) * kWl, win[2], x[2]);
  }
  const float beta = sigmoid(b_raw);
  rec[j] = make_float4(decay_alpha(p, z, a_log), ck, cq, 0.0f);
  k_s[j] = ck;
  const QkNorms n = qk_norms(cq, ck, red);

  // k̃ᵀS', q̃ᵀS' over this lane's rows, the warp's row groups, then the 4 warps.
  float4 ka = make_float4(0, 0, 0, 0), qa = ka;
#pragma unroll
  for (int i = 0; i < kRows; ++i) decay_and_project(s[i], rec[32 * w + 4 * i + rs], ka, qa);
  row_group_sum(ka, qa);
  if (rs == 0) ka_s[w][cg] = ka, qa_s[w][cg] = qa;
  __syncthreads();
  ka = qa = make_float4(0, 0, 0, 0);
#pragma unroll
  for (int ww = 0; ww < 4; ++ww) {
    const float4 a = ka_s[ww][cg], b = qa_s[ww][cg];
    ka.x += a.x, ka.y += a.y, ka.z += a.z, ka.w += a.w;
    qa.x += b.x, qa.y += b.y, qa.z += b.z, qa.w += b.w;
  }
  const float4 v4 = *reinterpret_cast<const float4*>(&v_s[4 * cg]);
  const auto [o, u] = delta_columns(v4, ka, qa, n, beta, p.scale);

  // Σo² of this CTA's 32 columns (row group 0 of every warp holds them all) into every CTA's slot
  // `rank`; then the state update S ← S' + k̃ uᵀ, stored while the other CTAs catch up.
  const float o2 = warp_sum(rs == 0 ? sum_squares(o) : 0.0f);
  cluster_wait();
  if (j < kRanks) store_cluster(&o2_s[rank], j, o2);
  cluster_arrive();
#pragma unroll
  for (int i = 0; i < kRows; ++i)
    *reinterpret_cast<float4*>(S + i * 4 * kD) = fma4(u, k_s[32 * w + 4 * i + rs], s[i]);
  const bool out = w == 0 && rs == 0;  // lanes 0..7 of warp 0 write the outputs of 4 columns each
  float rg[4], on[4];
  if (out)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      rg[c] = load_act(static_cast<const T*>(p.r), int64_t(bi) * p.r_stride + h * kD + col0 + 4 * cg + c);
      on[c] = p.o_norm[col0 + 4 * cg + c];
    }
  cluster_wait();

  // Gated RMSNorm of this CTA's 32 outputs; the q and k windows of its 32 channels.
  if (out) {
    const float inv_rms = rsqrtf((o2_s[0] + o2_s[1] + o2_s[2] + o2_s[3]) / kD + p.eps);
    const float oc[4] = {o.x, o.y, o.z, o.w};
#pragma unroll
    for (int c = 0; c < 4; ++c)
      store_act(static_cast<T*>(p.y), int64_t(bi) * p.y_stride + h * kD + col0 + 4 * cg + c,
                oc[c] * inv_rms * on[c] / (1.0f + expf(-rg[c])));
  }
  if (w == int(rank))
#pragma unroll
    for (int pr = 0; pr < 2; ++pr) conv_shift(conv + (int64_t(pr) * P + ch) * kWl, win[pr], x[pr]);
}

template <class T, bool kEarly>
void launch_typed(const KdaDecodeLaunch& l, const KdaDecodeForm& form) {
  const dim3 grid{unsigned(int64_t(l.B) * l.H * kRanks)};
  launch_kda_decode_kernel(kda_decode_cluster_kernel<T, kEarly>, grid, l, form.pdl,
                           "kda_decode (cluster) kernel");
}

template <class T>
void launch_early_or_not(const KdaDecodeLaunch& l, const KdaDecodeForm& form) {
  // State loads before the wait only where the caller allows it and the launch is programmatic.
  if (form.pdl && l.overlap_prior_kernel && l.stream != nullptr) return launch_typed<T, true>(l, form);
  launch_typed<T, false>(l, form);
}

}  // namespace

void launch_kda_decode_cluster(const KdaDecodeLaunch& l, const KdaDecodeForm& form) {
  if (l.B == 0) return;
  require(int64_t(l.B) * l.H * kRanks < (int64_t(1) << 31), "kda_decode (cluster): too many CTAs");
  if (l.bf16)
    launch_early_or_not<__nv_bfloat16>(l, form);
  else
    launch_early_or_not<float>(l, form);
}

}  // namespace ds::cuda
