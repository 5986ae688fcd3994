// KDA chunked prefill on sm_90 (K = V = 128, chunks of 16 tokens), in two kernels:
//
// K1 "prep" (kda_prefill_prep.cu), token-parallel (grid: groups of up to 2 chunks × heads, the next
//   chunk's loads in flight while one is computed). Per chunk and head: L2 norm of q and k, the
//   decay gate and its cumulative sum G (log2 units), β = sigmoid(b), and a record in a workspace:
//     K̂ = k ⊙ 2^G, Q̂ = scale · q ⊙ 2^G, K̃ = k ⊙ 2^(G_last − G)   (bf16 16×128 each)
//     A = (I + L)⁻¹ Diag(β) with L[r,i] = β_r Σ_j k_r k_i 2^(G_r − G_i), i < r (bf16 16×16)
//     M = scale · Σ_j q_r k_i 2^(G_r − G_i), i <= r                        (bf16 16×16)
//     γ = 2^G_last                                                          (f32 128)
//   Every exponent in K̂, Q̂, K̃ and γ is <= 0, so they are safe for any gate. The pair sums of L
//   and M run on tensor cores. When both half-spans of the chunk fit in range (always for the
//   bounded gate, lower bound −5: at most 8 × 5 nats) they factor around the middle row m:
//   2^(G_r − G_i) = 2^(G_r − G_m) · 2^(G_m − G_i). Otherwise (Kimi Linear's unbounded softplus gate
//   with a steep decay) they factor hierarchically: the pairs first separated at block size
//   16, 8, 4, 2 factor around the last row p of their lower half-block, so both factors
//   2^(G_r − G_p) and 2^(G_p − G_i) are <= 1 and nothing can overflow; four levels, each one masked
//   16×16 product.
// K2 "recurrence", head-parallel (grid: sequences × heads × value slices). Each warp owns 16 value
//   rows of the transposed state Sᵀ [V, K] in f32 registers and walks the chunks in order:
//     Xᵀ = Vᵀ − Sᵀ K̂ᵀ,  Ṽᵀ = Xᵀ Aᵀ,  Oᵀ = Sᵀ Q̂ᵀ + Ṽᵀ Mᵀ,  Sᵀ ← Sᵀ Diag(γ) + Ṽᵀ K̃
//   all as bf16 mma.sync with f32 accumulation (the state is rounded to bf16 only as an mma operand,
//   as fla does). Chunk records and value tiles stream through a pipeline of 3 to 8 stages. The
//   state is emitted (f32, [K, V] layout) into checkpoint slots after the requested chunks and into
//   the final slot at the end. With few (sequence, head) pairs the key-split form of K2
//   (kda_prefill_split.cu: a pair of warps per 16 value rows, each warp half the keys) runs instead.
// A call over long sequences is cut into segments (kda_prefill_plan.h): the prep kernels run on the
// caller's stream and the recurrences on a second stream of higher priority, the recurrence of
// segment s after the prep of s, so that it overlaps the prep of s + 1 (K2 alone fills few SMs).
// With few pairs the recurrence CTAs also reserve shared memory so that no prep CTA shares their
// multiprocessors (choose_k2). Where the recurrence is the longer half (few heads; choose_chain) the
// call is instead chained: one prep and one recurrence launch side by side, the recurrence waiting on
// per-window counters that the prep increments ("The chained form" below).
// Design after FlashKDA's K1/K2 split (MoonshotAI/FlashKDA, docs/20260420-flashkda-v1-deep-dive.md)
// and the chunkwise WY/UT form of the Kimi Linear report (arXiv 2510.26692, §3 and App. B).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/kda_prefill_record.cuh"
#include "kernels/cuda/kda_recurrence.cuh"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/mma.cuh"

namespace ds::cuda {
namespace {

using namespace kda_prefill_detail;

// ---- K2 ----------------------------------------------------------------------------------

template <class T, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) kda_recurrence_kernel(K2Params p) {
  using Stage = K2Stage<T, 16 * kWarps>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem_raw + p.stages * sizeof(Stage));

  const int n = blockIdx.x, h = blockIdx.y;
  const int v0 = blockIdx.z * Stage::kVCols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int* meta = p.seq_meta + n * kPieceMetaInts;
  const int64_t row0 = meta[kRow0];
  const int len = meta[kLen], nch = meta[kNChunks];
  const int vr0 = v0 + 16 * warp + g;  // this thread's value rows: vr0 and vr0 + 8
  const int64_t head_off = int64_t(h) * kD * kD;

  float St[16][4];
  begin_piece(p, meta, head_off, bars, St, vr0);

  // Everything addressed in the loop is set up here, once: the per-lane byte offsets of the
  // ldmatrix rows inside a stage (a 128-wide swizzled tile has four distinct patterns per lane;
  // k-steps 4..7 are 128 bytes further), the global source and shared destination of this thread's
  // value-tile pieces, and its output rows. The loop then only adds stage bases and strides.
  const K2Offsets off(0);
  K2Pipeline<T, Stage, kWarps * 32> pipe(p, meta, h, v0, smem_raw, bars);
  static_assert(decltype(pipe.loads)::kEven);
  K2Checkpoints cks(p, meta);
  // Output element (token 2t + e + 8 nt, value row vr0 + 8 i) of chunk c at orow + c·16·stride
  // + (e + 8 nt)·stride + 8 i.
  T* orow = static_cast<T*>(p.o) + (row0 + 2 * t) * p.o_stride + int64_t(h) * kD + vr0;
  const int64_t o_step = int64_t(kC) * p.o_stride, os1 = p.o_stride, os8 = 8 * p.o_stride, os9 = os8 + os1;
  for (int c = 0; c < nch; ++c) {
    const int s = pipe.wait();
    const Stage& st = pipe.stages[s];
    const uint32_t rec = pipe.stage_addr(s);
    const float* gamma = reinterpret_cast<const float*>(st.rec + kOffGamma);

    // Xᵀ and the first output term: Sᵀ K̂ᵀ and Sᵀ Q̂ᵀ (two interleaved accumulation chains each).
    float xa[2][2][4] = {}, oa[2][2][4] = {};
    state_products(St, rec, off, xa, oa);
    // Xᵀ = Vᵀ − Sᵀ K̂ᵀ  (rows: value index, columns: token)
    float x[2][4];
    const int vl = 16 * warp + g;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int tok = 8 * nt + 2 * t;
      x[nt][0] = to_f32(st.V[tok][vl]) - (xa[0][nt][0] + xa[1][nt][0]);
      x[nt][1] = to_f32(st.V[tok + 1][vl]) - (xa[0][nt][1] + xa[1][nt][1]);
      x[nt][2] = to_f32(st.V[tok][vl + 8]) - (xa[0][nt][2] + xa[1][nt][2]);
      x[nt][3] = to_f32(st.V[tok + 1][vl + 8]) - (xa[0][nt][3] + xa[1][nt][3]);
    }
    uint32_t vf[4], mb[4];
    pseudo_values(x, rec, off, vf, mb);  // Ṽᵀ = Xᵀ Aᵀ
    // Oᵀ = Sᵀ Q̂ᵀ + Ṽᵀ Mᵀ
    float o[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] = oa[0][nt][e] + oa[1][nt][e];
    mma_16816(o[0], vf, mb[0], mb[1]);
    mma_16816(o[1], vf, mb[2], mb[3]);
    {
      const int64_t rel[4] = {0, os1, os8, os9};  // tokens 2t, 2t + 1, 2t + 8, 2t + 9
      const int valid = len - c * kC;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (valid >= kC || 8 * nt + 2 * t + e < valid) {
            T* row = orow + rel[2 * nt + e];
            row[0] = from_f32<T>(o[nt][e]);
            row[8] = from_f32<T>(o[nt][2 + e]);
          }
      orow += o_step;
    }
    update_state(St, gamma, vf, rec, off);  // Sᵀ ← Sᵀ Diag(γ) + Ṽᵀ K̃
    cks.emit(c, St, head_off, vr0);
    pipe.advance();
  }
  cp_async_wait<0>();
  store_state(p.pool + int64_t(meta[kFinalSlot]) * p.slot_stride + head_off, St, vr0);
}

// K2 warps per CTA: env DS_KDA_K2_WARPS (2, 4 or 8), else 8 when the pieces × heads fill two CTAs
// per multiprocessor and 4 below. Every CTA reads each chunk's whole record, so narrower CTAs
// re-read it: with 2 warps (4 CTAs per head) the recurrence moved 3.8 TB/s from DRAM at H = 96 and
// held back the overlapped prep. On an H200, 4 warps were up to 12 % faster than 2 at H = 64 / 96 and
// within 3 % at H = 32 (docs/perf.md).
int k2_warps(int64_t n_seq_heads) {
  if (const char* e = std::getenv("DS_KDA_K2_WARPS")) {
    const int w = std::atoi(e);
    if (w == 2 || w == 4 || w == 8) return w;
  }
  return n_seq_heads >= 2 * multiprocessor_count() ? 8 : 4;
}

// How the recurrence kernels of one call are launched.
struct K2Form {
  int warps = 4;
  bool split = false;     // key-split kernel (kda_prefill_split.cu), else whole-key warps
  int reserve_bytes = 0;  // K2Params::reserve_smem_bytes of the overlapped segments' launches
};

// For a call whose first segment has n_seq_heads (piece, head) pairs. Few heads (the key-split
// kernel's 4-warp CTAs, four per pair, fit at one per multiprocessor: B = 1, H = 32 on an H200):
// the key split, and in overlapped segments 100 KB of shared memory per CTA, so that two share a
// multiprocessor and no prep CTA fits beside them. Measured on an H200 (docs/perf.md): the split
// alone 1–4 % faster than whole-key warps at H = 32 (6–17 % slower at H = 64 / 96); with the
// reservation the prep runs on the other ~68 multiprocessors instead of slowing the serial chunk
// steps it shares issue slots with: 8–18 % faster at H = 32, while at H = 64 / 96, where prep and
// recurrence both need the whole card, every reservation was within ±5 % or slower.
// Overrides: env DS_KDA_K2_WARPS (2, 4, 8), DS_KDA_K2_SPLIT (0 / 1), DS_KDA_K2_RESERVE_KB (0 .. 227).
K2Form choose_k2(int64_t n_seq_heads, int segments) {
  K2Form f;
  f.warps = k2_warps(n_seq_heads);
  const bool few = 4 * n_seq_heads <= multiprocessor_count();
  f.split = few;
  if (const char* e = std::getenv("DS_KDA_K2_SPLIT")) f.split = std::atoi(e) != 0;
  f.reserve_bytes = few ? 100 * 1024 : 0;
  if (const char* e = std::getenv("DS_KDA_K2_RESERVE_KB"))
    f.reserve_bytes = std::clamp(std::atoi(e), 0, 227) * 1024;
  if (segments == 1) f.reserve_bytes = 0;  // nothing to keep off the recurrence's multiprocessors
  return f;
}

// K2 pipeline stages: env DS_KDA_K2_STAGES (2 .. kMaxStages), else 3.
int k2_stages() {
  if (const char* e = std::getenv("DS_KDA_K2_STAGES")) {
    const int s = std::atoi(e);
    if (s >= 2 && s <= kMaxStages) return s;
  }
  return 3;
}

// Sets the whole-key recurrence's shared-memory limit for p and its carveout preference (the chained
// form: the largest shared memory, so that prep CTAs fit beside recurrence CTAs; otherwise the
// driver's choice), and returns its attributes with maxDynamicSharedSizeBytes = what a launch asks
// for. The first call also loads the kernel (lazy module loading).
template <class T, int kWarps>
cudaFuncAttributes prepare_k2(const K2Params& p, bool max_carveout) {
  const size_t smem = std::max(sizeof(K2Stage<T, 16 * kWarps>) * p.stages + p.stages * sizeof(uint64_t),
                               size_t(p.reserve_smem_bytes));
  return prepare_prefill_kernel(reinterpret_cast<const void*>(kda_recurrence_kernel<T, kWarps>), int(smem),
                                max_carveout);
}

template <class T, int kWarps>
void launch_k2(const K2Params& p, int pieces, int H, cudaStream_t stream) {
  const size_t smem = size_t(prepare_k2<T, kWarps>(p, p.win_count != nullptr).maxDynamicSharedSizeBytes);
  const dim3 grid{unsigned(pieces), unsigned(H), unsigned(8 / kWarps)};
  kda_recurrence_kernel<T, kWarps><<<grid, kWarps * 32, smem, stream>>>(p);
  check_launch("kda_prefill recurrence kernel");
}

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &status), "kda_prefill: capture status");
  return status != cudaStreamCaptureStatusNone;
}

// Segments asked of the plan (kda_prefill_plan.h; checkpoints off the chunk grid may add more): env
// DS_KDA_SEGMENTS (>= 1), else one per 128 chunks of the longest sequence, 1 to 16.
int prefill_segments(const KdaPrefillLaunch& a) {
  if (const char* e = std::getenv("DS_KDA_SEGMENTS")) {
    const int s = std::atoi(e);
    if (s >= 1) return s < 64 ? s : 64;
  }
  int64_t longest = 0;
  for (int n = 0; n < a.N; ++n) longest = std::max(longest, a.cu_seqlens[n + 1] - a.cu_seqlens[n]);
  const int64_t s = (longest + kC - 1) / kC / 128;
  return int(std::clamp<int64_t>(s, 1, 16));
}

// DS_KDA_TIMING=1: events around the phases of each call, printed to stderr (diagnostics only).
struct PhaseTimer {
  bool on = std::getenv("DS_KDA_TIMING") != nullptr;
  cudaEvent_t ev[4] = {};
  int n = 0;
  void mark(cudaStream_t s) {
    if (!on) return;
    cudaEventCreate(&ev[n]);
    cudaEventRecord(ev[n++], s);
  }
  void report(int segments) {
    if (!on || n < 3) return;
    cudaEventSynchronize(ev[n - 1]);
    float t[3] = {};
    for (int i = 0; i + 1 < n; ++i) cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
    if (n == 4)
      std::fprintf(stderr, "kda_prefill timing: setup %.3f ms, prep %.3f ms, recurrence %.3f ms\n", t[0],
                   t[1], t[2]);
    else if (segments == 0)
      std::fprintf(stderr, "kda_prefill timing: setup %.3f ms, prep + recurrence chained %.3f ms\n", t[0],
                   t[1]);
    else
      std::fprintf(stderr,
                   "kda_prefill timing: setup %.3f ms, prep + recurrence in %d overlapped segments %.3f ms\n",
                   t[0], segments, t[1]);
    for (int i = 0; i < n; ++i) cudaEventDestroy(ev[i]);
  }
};

template <class T>
K2Params k2_params(const KdaPrefillLaunch& a, const int* d_blob, const uint8_t* d_records,
                   const KdaPrefillPlan& plan, int s, const K2Form& form, const KdaPrepChain& chain) {
  const int first = plan.piece_begin[size_t(s)];
  K2Params p2{d_records,
              plan.n_chunks,
              a.v,
              a.v_stride,
              a.o,
              a.o_stride,
              a.pool,
              a.slot_stride,
              d_blob + plan.pieces_at + int64_t(first) * kPieceMetaInts,
              d_blob + plan.ck_chunk_at,
              d_blob + plan.ck_slot_at,
              k2_stages(),
              form.reserve_bytes};
  p2.win_count = chain.win_count, p2.win_shift = chain.win_shift, p2.n_windows = chain.n_windows;
  return p2;
}

template <class T>
void launch_recurrence(const KdaPrefillLaunch& a, const int* d_blob, const uint8_t* d_records,
                       const KdaPrefillPlan& plan, int s, const K2Form& form, cudaStream_t stream,
                       const KdaPrepChain& chain = {}) {
  const int pieces = plan.piece_begin[size_t(s) + 1] - plan.piece_begin[size_t(s)];
  if (pieces == 0) return;
  const K2Params p2 = k2_params<T>(a, d_blob, d_records, plan, s, form, chain);
  if (form.split) return launch_k2_split<T>(p2, pieces, a.H, form.warps, stream);
  switch (form.warps) {
    case 8:
      return launch_k2<T, 8>(p2, pieces, a.H, stream);
    case 4:
      return launch_k2<T, 4>(p2, pieces, a.H, stream);
    default:
      return launch_k2<T, 2>(p2, pieces, a.H, stream);
  }
}

// ---- The chained form -------------------------------------------------------------------------
// One prep launch over the whole call and one recurrence launch over whole sequences, running side by
// side: the recurrence is launched first, on a stream of higher priority, and its CTAs wait for each
// window of 2^win_shift chunks of their head to be counted complete by the prep (K2Params::win_count),
// whose CTAs run heads fastest so that windows complete in chunk order. No segment boundaries: the
// recurrence never refills its pipeline or reloads its state, and the prep fills whatever the
// recurrence leaves free from the first to the last chunk.
// Progress: prep CTAs never wait, so the call finishes as long as one prep CTA can always be resident
// somewhere. The recurrence CTAs spin, so their count R is bounded: if at most k of them fit on a
// multiprocessor together with one prep CTA (registers, shared memory under the largest carveout,
// threads, CTA slots: the occupancy arithmetic below), R <= SMs · (k + 1) − 1 leaves, however they are
// placed, a multiprocessor with room for a prep CTA. Both kernels are loaded (cudaFuncGetAttributes)
// before the recurrence is launched: under lazy module loading a first launch loads its kernel, and a
// load can wait for the kernels running on the device — the spinning recurrence (the hangs of
// docs/perf.md run 23). Both prefer the largest shared-memory carveout, so that prep CTAs fit on the
// recurrence's multiprocessors (run 23's slowdowns matched a prep confined to the others).
struct ChainForm {
  bool on = false;
  K2Form k2;
  int win_shift = 4;
};

// Resident CTAs per multiprocessor, by resource: registers (allocated per warp in units of 256),
// shared memory (with the driver's reserve per CTA), threads, CTA slots.
struct SmUse {
  int64_t regs = 0, smem = 0, threads = 0, ctas = 0;
};
SmUse sm_use(const cudaFuncAttributes& f, int threads, const cudaDeviceProp& d) {
  const int64_t warps = (threads + 31) / 32, per_warp = (int64_t(f.numRegs) * 32 + 255) / 256 * 256;
  const int64_t smem =
      int64_t(f.sharedSizeBytes) + f.maxDynamicSharedSizeBytes + int64_t(d.reservedSharedMemPerBlock);
  return {warps * per_warp, (smem + 1023) / 1024 * 1024, threads, 1};
}

// The most recurrence CTAs (use r) that fit on one multiprocessor beside one prep CTA (use p).
int recurrence_ctas_beside_prep(const SmUse& r, const SmUse& p, const cudaDeviceProp& d) {
  const int64_t cap[4] = {d.regsPerMultiprocessor, int64_t(d.sharedMemPerMultiprocessor),
                          d.maxThreadsPerMultiProcessor, d.maxBlocksPerMultiProcessor};
  const int64_t need_r[4] = {r.regs, r.smem, r.threads, r.ctas},
                need_p[4] = {p.regs, p.smem, p.threads, p.ctas};
  int64_t k = 1 << 20;
  for (int i = 0; i < 4; ++i) {
    if (need_p[i] > cap[i]) return -1;
    if (need_r[i] > 0) k = std::min(k, (cap[i] - need_p[i]) / need_r[i]);
  }
  return int(k);
}

const cudaDeviceProp& device_props() {
  static const cudaDeviceProp props = [] {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp d{};
    check(cudaGetDeviceProperties(&d, dev), "kda_prefill: device properties");
    return d;
  }();
  return props;
}

// Env DS_KDA_CHAIN: 0 never chained, 1 chained wherever the progress bound allows; unset (unless
// DS_KDA_SEGMENTS is set): chained where the recurrence is the longer half of the call — few pairs
// (four 4-warp CTAs per (sequence, head) fit on the card: H = 32, B = 1), or the safe gate with its
// 4-warp CTAs (two per pair) below the multiprocessor count (H = 64, B = 1). The recurrence: whole-key
// CTAs (DS_KDA_K2_WARPS, default 4) asking for 200 KB of shared memory each with few pairs (one per
// multiprocessor), 100 KB below the multiprocessor count, nothing otherwise (DS_KDA_K2_RESERVE_KB
// overrides). Measured on an H200 (docs/perf.md run 24), against the segments: H = 32 4–14 % faster
// (both gates), safe H = 64 6–9 % faster; softplus H = 64 (whose prep, the longer half, loses the CTA
// slots the recurrence holds) 3–6 % slower in the side-by-side table, and H = 96 (any reservation, 4 or
// 8 warps) 5–53 % slower, so those keep the segments. Window: 2^DS_KDA_CHAIN_SHIFT chunks (default 16).
// `plan` is the call's plan for one segment.
template <class T>
ChainForm choose_chain(const KdaPrefillLaunch& a, const KdaPrefillPlan& plan) {
  ChainForm c;
  const char* env = std::getenv("DS_KDA_CHAIN");
  const int mode = env ? std::atoi(env) : -1;  // -1: default policy
  if (mode == 0 || (mode < 0 && std::getenv("DS_KDA_SEGMENTS"))) return c;
  // (The prep's grid is (H, chunk groups): at most 65535 groups, at least one chunk each.)
  if (plan.segments() != 1 || plan.n_chunks == 0 || plan.n_chunks > 65535) return c;
  const int sms = multiprocessor_count();
  const int64_t pairs = int64_t(plan.piece_begin[1]) * a.H;
  c.k2.warps = 4;
  if (const char* e = std::getenv("DS_KDA_K2_WARPS")) {
    const int w = std::atoi(e);
    if (w == 2 || w == 4 || w == 8) c.k2.warps = w;
  }
  c.k2.split = false;
  const int64_t ctas = pairs * (8 / c.k2.warps);
  if (4 * pairs <= sms)
    c.k2.reserve_bytes = 200 * 1024;
  else if (ctas < sms && (a.safe_gate || mode == 1))
    c.k2.reserve_bytes = 100 * 1024;
  else if (mode == 1)
    c.k2.reserve_bytes = 0;
  else
    return c;
  if (const char* e = std::getenv("DS_KDA_K2_RESERVE_KB"))
    c.k2.reserve_bytes = std::clamp(std::atoi(e), 0, 227) * 1024;
  if (const char* e = std::getenv("DS_KDA_CHAIN_SHIFT")) c.win_shift = std::clamp(std::atoi(e), 0, 12);
  // Load both kernels and read what a CTA of each takes.
  const cudaDeviceProp& d = device_props();
  const cudaFuncAttributes prep = prepare_kda_prep<T>(a, true);
  K2Params p{};
  p.stages = k2_stages(), p.reserve_smem_bytes = c.k2.reserve_bytes;
  const cudaFuncAttributes rec = c.k2.warps == 8   ? prepare_k2<T, 8>(p, true)
                                 : c.k2.warps == 4 ? prepare_k2<T, 4>(p, true)
                                                   : prepare_k2<T, 2>(p, true);
  const int k = recurrence_ctas_beside_prep(sm_use(rec, 32 * c.k2.warps, d), sm_use(prep, 128, d), d);
  if (k < 0 || ctas > int64_t(sms) * (k + 1) - 1) return c;
  c.on = true;
  return c;
}

template <class T>
void run_prefill(const KdaPrefillLaunch& a, cudaStream_t stream) {
  // The plan is uploaded from host memory that lives only during this call, so a graph replay would
  // read it after it is gone.
  require(!stream_capturing(stream),
          "kda_prefill: cannot be captured into a CUDA graph (its plan is uploaded "
          "from host memory on every call)");
  keep_pool_memory();
  PhaseTimer timer;
  timer.mark(stream);
  KdaPrefillPlan plan = plan_kda_prefill(a, 1);
  const ChainForm chain = choose_chain<T>(a, plan);
  if (!chain.on) {
    const int segments = prefill_segments(a);
    if (segments > 1) plan = plan_kda_prefill(a, segments);
  }
  const int S = plan.segments();
  int* d_blob = nullptr;
  uint8_t* d_records = nullptr;
  int* d_counts = nullptr;
  KdaPrepChain counts;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d_blob), plan.blob.size() * sizeof(int) + 16, stream),
        "kda_prefill: metadata allocation");
  check(cudaMemcpyAsync(d_blob, plan.blob.data(), plan.blob.size() * sizeof(int), cudaMemcpyHostToDevice,
                        stream),
        "kda_prefill: metadata upload");
  if (plan.n_chunks > 0)
    check(cudaMallocAsync(reinterpret_cast<void**>(&d_records), size_t(a.H) * plan.n_chunks * kRecordBytes,
                          stream),
          "kda_prefill: workspace allocation");
  if (chain.on) {
    counts.win_shift = chain.win_shift;
    counts.n_windows = (plan.n_chunks + (int64_t(1) << chain.win_shift) - 1) >> chain.win_shift;
    const size_t bytes = size_t(a.H) * size_t(counts.n_windows) * sizeof(int);
    check(cudaMallocAsync(reinterpret_cast<void**>(&d_counts), bytes, stream), "kda_prefill: counters");
    check(cudaMemsetAsync(d_counts, 0, bytes, stream), "kda_prefill: counters");
    counts.win_count = d_counts;
  }
  timer.mark(stream);
  const K2Form form = chain.on ? chain.k2 : choose_k2(int64_t(plan.piece_begin[1]) * a.H, S);
  auto launch_prep = [&](int s, cudaStream_t st, const KdaPrepChain& ch) {
    const int64_t c0 = plan.chunk_begin[size_t(s)];
    launch_kda_prep<T>(a, reinterpret_cast<const int2*>(d_blob), d_records, plan.n_chunks, c0,
                       plan.chunk_begin[size_t(s) + 1] - c0, st, ch);
  };
  if (S == 1 && !chain.on) {
    launch_prep(0, stream, {});
    timer.mark(stream);
    launch_recurrence<T>(a, d_blob, d_records, plan, 0, form, stream);
  } else {
    // Recurrences on a second stream of higher priority. Segments: prep kernels on the caller's
    // stream, each recurrence after its segment's prep, so that the recurrence of segment s overlaps
    // the prep of s + 1. Chained: the recurrence first (its CTAs placed before the prep's), then the
    // prep, both after the setup above.
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "kda_prefill: stream priorities");
    cudaStream_t rec = nullptr;
    check(cudaStreamCreateWithPriority(&rec, cudaStreamNonBlocking, greatest), "kda_prefill: stream");
    std::vector<cudaEvent_t> ready(size_t(S) + 1, nullptr);
    for (cudaEvent_t& e : ready)
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "kda_prefill: event");
    if (chain.on) {
      check(cudaEventRecord(ready[0], stream), "kda_prefill: event record");
      check(cudaStreamWaitEvent(rec, ready[0]), "kda_prefill: stream wait");
      launch_recurrence<T>(a, d_blob, d_records, plan, 0, form, rec, counts);
      launch_prep(0, stream, counts);
    } else {
      for (int s = 0; s < S; ++s) {
        launch_prep(s, stream, {});
        check(cudaEventRecord(ready[size_t(s)], stream), "kda_prefill: event record");
        check(cudaStreamWaitEvent(rec, ready[size_t(s)]), "kda_prefill: stream wait");
        launch_recurrence<T>(a, d_blob, d_records, plan, s, form, rec);
      }
    }
    check(cudaEventRecord(ready[size_t(S)], rec), "kda_prefill: event record");
    check(cudaStreamWaitEvent(stream, ready[size_t(S)]), "kda_prefill: stream wait");
    for (cudaEvent_t e : ready) cudaEventDestroy(e);
    cudaStreamDestroy(rec);  // released once its work is done
  }
  timer.mark(stream);
  timer.report(chain.on ? 0 : S);
  if (d_counts) check(cudaFreeAsync(d_counts, stream), "kda_prefill: counters free");
  if (d_records) check(cudaFreeAsync(d_records, stream), "kda_prefill: workspace free");
  check(cudaFreeAsync(d_blob, stream), "kda_prefill: metadata free");
}

}  // namespace

void launch_kda_prefill(const KdaPrefillLaunch& l) {
  const cudaStream_t stream = static_cast<cudaStream_t>(l.stream);
  if (l.bf16)
    run_prefill<__nv_bfloat16>(l, stream);
  else
    run_prefill<float>(l, stream);
}

}  // namespace ds::cuda
