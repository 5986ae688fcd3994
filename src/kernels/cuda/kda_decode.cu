// KDA decode on sm_90 (K = V = 128): one new token for each of B sequences whose states sit in
// arbitrary pool slots. This file holds the plain form ("rows") and the choice of form; the default
// form is in kda_decode_cols.cu. One CTA of 128 threads per (sequence, head) does, in one pass over the
// state: the short-conv step of q, k, v (window in the conv pool, updated in place) + SiLU, the L2
// norms of q and k, the decay gate, β = sigmoid(b), the delta-rule update and the read-out, and the
// gated RMSNorm of the output. The state S [K, V] f32 is read once and written once: thread
// (row quarter rq, column group cg) holds rows 32·rq .. 32·rq+31 of columns 4·cg .. 4·cg+3 in
// registers, and with S' = Diag(α) S the two reductions kᵀS' and qᵀS' give everything:
//   e = v − kᵀS',   o = scale · (qᵀS' + β (q·k) e),   S ← S' + β k eᵀ.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <string_view>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_launch.h"

namespace ds::cuda {
namespace {

constexpr int kD = 128;
constexpr int kMaxW = 8;

// Sum over the block's 128 threads; `red` is 4 floats of shared memory. Ends with a barrier.
__device__ __forceinline__ float block_sum(float x, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  __syncthreads();  // red may still be read by a previous call
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
  __syncthreads();
  return red[0] + red[1] + red[2] + red[3];
}

template <class T>
__global__ void __launch_bounds__(128) kda_decode_kernel(KdaDecodeLaunch p) {
  __shared__ float q_s[kD], k_s[kD], v_s[kD], alpha_s[kD], e_s[kD];
  __shared__ float part_a[4][kD], part_b[4][kD];
  __shared__ float red[4];
  const int bi = blockIdx.x, h = blockIdx.y, j = threadIdx.x;
  const int slot = p.slots[bi];
  const int P = p.H * kD;
  float* S = p.pool + int64_t(slot) * p.slot_stride + int64_t(h) * kD * kD;

  // Issue the state loads first: thread (rq, cg) holds rows 32 rq + i, columns 4 cg .. 4 cg + 3.
  const int cg = j % 32, rq = j / 32;
  float4 s[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) s[i] = *reinterpret_cast<const float4*>(S + (32 * rq + i) * kD + 4 * cg);

  // Short conv step for channel j of q, k and v: out = silu(Σ taps · [window ; x]); window shifts.
  const T* pre[3] = {static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v)};
  const int64_t pre_stride[3] = {p.q_stride, p.k_stride, p.v_stride};
  float conv_out[3];
  const int ch = h * kD + j, wlen = p.W - 1;
#pragma unroll
  for (int pr = 0; pr < 3; ++pr) {
    float* win = p.conv + int64_t(slot) * p.conv_stride + (int64_t(pr) * P + ch) * wlen;
    const float* tap = p.taps + (int64_t(pr) * P + ch) * p.W;
    const float x = load_act(pre[pr], int64_t(bi) * pre_stride[pr] + ch);
    float w[kMaxW];
    float acc = tap[wlen] * x;
    for (int i = 0; i < wlen; ++i) w[i] = win[i], acc += tap[i] * w[i];
    for (int i = 0; i + 1 < wlen; ++i) win[i] = w[i + 1];
    win[wlen - 1] = x;
    conv_out[pr] = acc / (1.0f + expf(-acc));
  }
  // Gate, β.
  const float a = expf(p.a_log[h]);
  const float z = load_act(static_cast<const T*>(p.f), int64_t(bi) * p.f_stride + ch) + p.dt_bias[ch];
  const float g =
      p.safe_gate ? p.lower_bound / (1.0f + expf(-a * z)) : -a * (z > 20.0f ? z : log1pf(expf(z)));
  alpha_s[j] = expf(g);
  const float beta =
      1.0f / (1.0f + expf(-load_act(static_cast<const T*>(p.b), int64_t(bi) * p.b_stride + h)));
  // L2 norms of q and k.
  const float inv_q = rsqrtf(block_sum(conv_out[0] * conv_out[0], red) + 1e-6f);
  const float inv_k = rsqrtf(block_sum(conv_out[1] * conv_out[1], red) + 1e-6f);
  const float qn = conv_out[0] * inv_q, kn = conv_out[1] * inv_k;
  q_s[j] = qn, k_s[j] = kn, v_s[j] = conv_out[2];
  const float qk = block_sum(qn * kn, red);  // barrier: q_s, k_s, v_s, alpha_s visible

  // Partial reductions over this thread's 32 rows of S' = Diag(α) S.
  float4 pa = make_float4(0, 0, 0, 0), pb = pa;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int kd = 32 * rq + i;
    const float al = alpha_s[kd];
    s[i].x *= al, s[i].y *= al, s[i].z *= al, s[i].w *= al;
    const float kk = k_s[kd], qq = q_s[kd];
    pa.x += kk * s[i].x, pa.y += kk * s[i].y, pa.z += kk * s[i].z, pa.w += kk * s[i].w;
    pb.x += qq * s[i].x, pb.y += qq * s[i].y, pb.z += qq * s[i].z, pb.w += qq * s[i].w;
  }
  *reinterpret_cast<float4*>(&part_a[rq][4 * cg]) = pa;
  *reinterpret_cast<float4*>(&part_b[rq][4 * cg]) = pb;
  __syncthreads();
  // Column j: e, o.
  const float kS = part_a[0][j] + part_a[1][j] + part_a[2][j] + part_a[3][j];
  const float qS = part_b[0][j] + part_b[1][j] + part_b[2][j] + part_b[3][j];
  const float e = v_s[j] - kS;
  const float o = p.scale * (qS + beta * qk * e);
  e_s[j] = beta * e;
  const float ms = block_sum(o * o, red);  // barrier: e_s visible
  // Update and write S.
  const float4 e4 = *reinterpret_cast<const float4*>(&e_s[4 * cg]);
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const float kk = k_s[32 * rq + i];
    s[i].x += kk * e4.x, s[i].y += kk * e4.y, s[i].z += kk * e4.z, s[i].w += kk * e4.w;
    *reinterpret_cast<float4*>(S + (32 * rq + i) * kD + 4 * cg) = s[i];
  }
  // Gated RMSNorm output.
  const float rg = load_act(static_cast<const T*>(p.r), int64_t(bi) * p.r_stride + ch);
  const float y = o * rsqrtf(ms / kD + p.eps) * p.o_norm[j] / (1.0f + expf(-rg));
  store_act(static_cast<T*>(p.y), int64_t(bi) * p.y_stride + ch, y);
}

}  // namespace

// The form used when DS_KDA_DECODE is unset or names no form (kda_launch.h lists them). On an H200
// (H = 32, batch 1-256) cols-hf moved the state at 1.09-1.36x the rate of rows, and no other form
// was faster at batch >= 32; as a programmatic dependent launch (-pdl) it gained 0.6-3 % more at
// batch 32-256, 4-5 % with the state loads overlapping the previous kernel. The cluster form at batch 1
// (auto-pdl, 128 CTAs instead of 32) left the 48B-shape decode step 0.6-0.8 % slower (docs/perf.md,
// decode round 7).
constexpr const char* kDefaultDecodeForm = "cols-hf-pdl";

KdaDecodeForm parse_kda_decode_form(const char* name) {
  std::string_view n = name ? name : kDefaultDecodeForm;
  KdaDecodeForm f;
  auto suffix = [&n](std::string_view x) {
    if (n.size() < x.size() || n.substr(n.size() - x.size()) != x) return false;
    n.remove_suffix(x.size());
    return true;
  };
  for (bool more = true; more;) {
    more = false;
    if (suffix("-pf")) f.prefetch = more = true;
    if (suffix("-hf")) f.heads_first = more = true;
    if (suffix("-pdl")) f.pdl = more = true;
  }
  if (n == "rows") return KdaDecodeForm{};
  if (n == "cols") return f.cols = true, f;
  if (n == "cols-smem4") return f.cols = true, f.smem_ctas = 4, f;
  if (n == "cols-smem5") return f.cols = true, f.smem_ctas = 5, f;
  if (n == "cl4") return f.cluster = true, f;
  if (n == "auto") return f.automatic = true, f;
  return name ? parse_kda_decode_form(nullptr) : KdaDecodeForm{};
}

void launch_kda_decode(const KdaDecodeLaunch& l) {
  if (l.B == 0) return;
  KdaDecodeForm form = parse_kda_decode_form(std::getenv("DS_KDA_DECODE"));
  if (form.automatic) {
    form.automatic = false;
    if (int64_t(l.B) * l.H < multiprocessor_count())
      form.cluster = true;
    else
      form.cols = form.heads_first = true;
  }
  if (form.cluster && kda_decode_cols_supported(l)) return launch_kda_decode_cluster(l, form);
  if (form.cols && kda_decode_cols_supported(l)) return launch_kda_decode_cols(l, form);
  const dim3 grid{unsigned(l.B), unsigned(l.H)};
  const cudaStream_t stream = static_cast<cudaStream_t>(l.stream);
  if (l.bf16)
    kda_decode_kernel<__nv_bfloat16><<<grid, 128, 0, stream>>>(l);
  else
    kda_decode_kernel<float><<<grid, 128, 0, stream>>>(l);
  check_launch("kda_decode kernel");
}

}  // namespace ds::cuda
