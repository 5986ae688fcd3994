// KDA prefill recurrence, key-split form (the K2 of kda_prefill.cu with half the work per warp).
//
// The chunk step of K2 is bound by one warp's issue and dependent latency (52 mma and ~450 other
// instructions per warp and chunk, one warp per scheduler at H = 32), so with few heads the serial
// chunk chain sets the time however many SMs are free. Here a pair of warps owns 16 value rows of
// the transposed state Sᵀ [V, K]: warp kh (0 or 1) holds keys [64 kh, 64 kh + 64) in registers.
// Per chunk each warp forms its half of the key sums, Sᵀ K̂ᵀ and Sᵀ Q̂ᵀ over its 64 keys, and the
// pair swaps halves through shared memory (one 64-thread named barrier):
//   Xᵀ = Vᵀ − (P_0 + P_1)          both warps, the same bits (addition commutes)
//   Ṽᵀ = Xᵀ Aᵀ                      both warps (2 mma)
//   Oᵀ = (O_0 + O_1) + Ṽᵀ Mᵀ        warp kh for tokens [8 kh, 8 kh + 8) only
//   Sᵀ[:, half] ← Sᵀ[:, half] Diag(γ[half]) + Ṽᵀ K̃[:, half]
// i.e. 27 mma per warp instead of 52, and half the γ scaling and state packing. Everything else
// (pipeline of bulk-copied chunk records and value tiles, checkpoints, final state) is as in K2.
// Measured on an H200 (H = 32, T = 32768, one segment): the recurrence 1.55 → 1.39 ms; the swap
// (a store, the named barrier and a load on the chain of every chunk) takes back most of what the
// halved work saves, and at H = 64 / 96, where CTAs share multiprocessors, it is slower
// (kda_prefill.cu, choose_k2, picks it for few heads only).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_recurrence.cuh"

namespace ds::cuda {
namespace kda_prefill_detail {
namespace {

// Per-lane exchange record of one warp for one chunk: its partial Xᵀ (two n-tiles) and its partial
// Oᵀ for the partner's n-tile, as three float4 (lane-contiguous: conflict-free).
struct alignas(16) SplitSwap {
  float4 v[3][32];
};

template <class T, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) kda_recurrence_split_kernel(K2Params p) {
  static_assert(kWarps % 2 == 0);
  constexpr int kPairs = kWarps / 2;
  using Stage = K2Stage<T, 16 * kPairs>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  SplitSwap* swap = reinterpret_cast<SplitSwap*>(smem_raw + p.stages * sizeof(Stage));  // [2][kWarps]
  uint64_t* bars =
      reinterpret_cast<uint64_t*>(smem_raw + p.stages * sizeof(Stage) + 2 * kWarps * sizeof(SplitSwap));

  const int n = blockIdx.x, h = blockIdx.y;
  const int v0 = blockIdx.z * Stage::kVCols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int pair = warp / 2, kh = warp % 2, k0 = 64 * kh;
  const int* meta = p.seq_meta + n * kPieceMetaInts;
  const int64_t row0 = meta[kRow0];
  const int len = meta[kLen], nch = meta[kNChunks];
  const int vl = 16 * pair + g;  // this thread's value rows in the stage tile: vl and vl + 8
  const int vr0 = v0 + vl;       // and in the head
  const int64_t head_off = int64_t(h) * kD * kD;

  float St[8][4];
  begin_piece(p, meta, head_off, bars, St, vr0, k0);

  // Per-lane ldmatrix offsets inside a stage for this warp's key half (keys 64..127 of a swizzled
  // 128-wide tile are 128 bytes after keys 0..63 in every row).
  const K2Offsets off(kh);
  K2Pipeline<T, Stage, kWarps * 32> pipe(p, meta, h, v0, smem_raw, bars);
  K2Checkpoints cks(p, meta);
  // This warp's output: tokens 8 kh + 2t + e of each chunk, value rows vr0 and vr0 + 8.
  T* orow = static_cast<T*>(p.o) + (row0 + 8 * kh + 2 * t) * p.o_stride + int64_t(h) * kD + vr0;
  const int64_t o_step = int64_t(kC) * p.o_stride, os1 = p.o_stride;
  const float* gamma_half = nullptr;
  for (int c = 0; c < nch; ++c) {
    const int s = pipe.wait();
    const Stage& st = pipe.stages[s];
    const uint32_t rec = pipe.stage_addr(s);
    gamma_half = reinterpret_cast<const float*>(st.rec + kOffGamma) + k0;

    // This warp's halves of Sᵀ K̂ᵀ and Sᵀ Q̂ᵀ (two accumulation chains each).
    float xa[2][2][4] = {}, oa[2][2][4] = {};
    state_products(St, rec, off, xa, oa);
    float px[2][4], po[4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) px[nt][e] = xa[0][nt][e] + xa[1][nt][e];
    float own[4];  // (selects, not a run-time index: that would put oa in local memory)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float s0 = oa[0][0][e] + oa[1][0][e], s1 = oa[0][1][e] + oa[1][1][e];
      own[e] = kh ? s1 : s0;
      po[e] = kh ? s0 : s1;  // the partner's tokens
    }
    SplitSwap& mine = swap[(c & 1) * kWarps + warp];
    const SplitSwap& theirs = swap[(c & 1) * kWarps + (warp ^ 1)];
    mine.v[0][lane] = make_float4(px[0][0], px[0][1], px[0][2], px[0][3]);
    mine.v[1][lane] = make_float4(px[1][0], px[1][1], px[1][2], px[1][3]);
    mine.v[2][lane] = make_float4(po[0], po[1], po[2], po[3]);
    asm volatile("bar.sync %0, 64;\n" ::"r"(1 + pair) : "memory");
    const float4 q0 = theirs.v[0][lane], q1 = theirs.v[1][lane], qo = theirs.v[2][lane];
    const float qx[2][4] = {{q0.x, q0.y, q0.z, q0.w}, {q1.x, q1.y, q1.z, q1.w}};

    // Xᵀ = Vᵀ − (P_0 + P_1)
    float x[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int tok = 8 * nt + 2 * t;
      x[nt][0] = to_f32(st.V[tok][vl]) - (px[nt][0] + qx[nt][0]);
      x[nt][1] = to_f32(st.V[tok + 1][vl]) - (px[nt][1] + qx[nt][1]);
      x[nt][2] = to_f32(st.V[tok][vl + 8]) - (px[nt][2] + qx[nt][2]);
      x[nt][3] = to_f32(st.V[tok + 1][vl + 8]) - (px[nt][3] + qx[nt][3]);
    }
    uint32_t vf[4], mb[4];
    pseudo_values(x, rec, off, vf, mb);  // Ṽᵀ = Xᵀ Aᵀ
    // Oᵀ for this warp's tokens: own half + the partner's half + Ṽᵀ Mᵀ.
    float o[4] = {own[0] + qo.x, own[1] + qo.y, own[2] + qo.z, own[3] + qo.w};
    mma_16816(o, vf, kh ? mb[2] : mb[0], kh ? mb[3] : mb[1]);
    {
      const int valid = len - c * kC;
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (valid >= kC || 8 * kh + 2 * t + e < valid) {
          T* row = orow + (e ? os1 : 0);
          row[0] = from_f32<T>(o[e]);
          row[8] = from_f32<T>(o[2 + e]);
        }
      orow += o_step;
    }
    update_state(St, gamma_half, vf, rec, off);  // Sᵀ[:, half] ← Sᵀ[:, half] Diag(γ) + Ṽᵀ K̃[:, half]
    cks.emit(c, St, head_off, vr0, k0);
    pipe.advance();
  }
  cp_async_wait<0>();
  store_state(p.pool + int64_t(meta[kFinalSlot]) * p.slot_stride + head_off, St, vr0, k0);
}

template <class T, int kWarps>
void launch_split(const K2Params& p, int pieces, int H, cudaStream_t stream) {
  using Stage = K2Stage<T, 8 * kWarps>;
  const size_t smem =
      std::max(sizeof(Stage) * p.stages + 2 * kWarps * sizeof(SplitSwap) + p.stages * sizeof(uint64_t),
               size_t(p.reserve_smem_bytes));
  check(cudaFuncSetAttribute(kda_recurrence_split_kernel<T, kWarps>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
        "kda_prefill: shared memory limit");
  const dim3 grid{unsigned(pieces), unsigned(H), unsigned(kD / Stage::kVCols)};
  kda_recurrence_split_kernel<T, kWarps><<<grid, kWarps * 32, smem, stream>>>(p);
  check_launch("kda_prefill recurrence kernel (key split)");
}

}  // namespace

template <class T>
void launch_k2_split(const K2Params& p, int pieces, int H, int warps, cudaStream_t stream) {
  switch (warps) {
    case 8:
      return launch_split<T, 8>(p, pieces, H, stream);
    case 4:
      return launch_split<T, 4>(p, pieces, H, stream);
    default:
      return launch_split<T, 2>(p, pieces, H, stream);
  }
}

template void launch_k2_split<__nv_bfloat16>(const K2Params&, int, int, int, cudaStream_t);
template void launch_k2_split<float>(const K2Params&, int, int, int, cudaStream_t);

}  // namespace kda_prefill_detail
}  // namespace ds::cuda
