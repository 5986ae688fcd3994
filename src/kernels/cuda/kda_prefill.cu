// KDA chunked prefill on sm_90 (K = V = 128, chunks of 16 tokens), in two kernels:
//
// K1 "prep" (kda_prefill_prep.cu), token-parallel (grid: groups of up to 4 chunks × heads, the next
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
//   the final slot at the end.
// A call over long sequences is cut into segments (kda_prefill_plan.h): the prep kernels run on the
// caller's stream and the recurrences on a second stream of higher priority, the recurrence of
// segment s after the prep of s, so that it overlaps the prep of s + 1 (K2 alone fills few SMs).
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
#include "kernels/cuda/memory.h"
#include "kernels/cuda/mma.cuh"

namespace ds::cuda {
namespace {

using namespace kda_prefill_detail;

// ---- K2 ----------------------------------------------------------------------------------

// Stages of the record / value-tile pipeline: 2 .. kMaxStages (kernel argument).
constexpr int kMaxStages = 8;

// cp.async.wait_group with a run-time count, clamped to what the pipeline can have in flight.
__device__ __forceinline__ void cp_async_wait_upto(int n) {
  switch (n) {
    case 0:
      return cp_async_wait<0>();
    case 1:
      return cp_async_wait<1>();
    case 2:
      return cp_async_wait<2>();
    case 3:
      return cp_async_wait<3>();
    case 4:
      return cp_async_wait<4>();
    case 5:
      return cp_async_wait<5>();
    default:
      return cp_async_wait<6>();
  }
}

template <class T, int kWarps>
struct K2Stage {
  static constexpr int kVCols = 16 * kWarps;
  static constexpr int kVLd = kVCols + 16 / int(sizeof(T));
  alignas(128) uint8_t rec[kRecordBytes];  // one bulk copy of the chunk's record
  alignas(16) T V[kC][kVLd];
};

struct K2Params {
  const uint8_t* records;
  int64_t n_chunks;
  const void* v;
  int64_t v_stride;
  void* o;
  int64_t o_stride;
  float* pool;
  int64_t slot_stride;
  const int* seq_meta;  // [pieces][kPieceMetaInts]
  const int* ck_chunk;  // chunk index (within its sequence) after which to emit
  const int* ck_slot;
  int stages;  // pipeline depth, 2 .. kMaxStages
};

// Sᵀ fragment of this thread (16 n-tiles over the key dim) -> S[kd][v] at `dst` ([K, V] layout).
__device__ __forceinline__ void store_state(float* dst, const float (&St)[16][4], int vr0) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt) {
    const int kd = 8 * nt + 2 * t;
    dst[kd * kD + vr0] = St[nt][0];
    dst[(kd + 1) * kD + vr0] = St[nt][1];
    dst[kd * kD + vr0 + 8] = St[nt][2];
    dst[(kd + 1) * kD + vr0 + 8] = St[nt][3];
  }
}

template <class T, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) kda_recurrence_kernel(K2Params p) {
  using Stage = K2Stage<T, kWarps>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const int depth = p.stages;
  Stage* stages = reinterpret_cast<Stage*>(smem_raw);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem_raw + depth * sizeof(Stage));

  const int n = blockIdx.x, h = blockIdx.y;
  const int v0 = blockIdx.z * Stage::kVCols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int mat = lane / 8, rr = lane % 8;
  const int* meta = p.seq_meta + n * kPieceMetaInts;
  const int64_t row0 = meta[kRow0];
  const int len = meta[kLen], nch = meta[kNChunks];
  const int vr0 = v0 + 16 * warp + g;  // this thread's value rows: vr0 and vr0 + 8
  const int64_t head_off = int64_t(h) * kD * kD;

  if (threadIdx.x == 0) {
    for (int s = 0; s < depth; ++s) mbar_init(&bars[s], 1);
    fence_barrier_init();
  }

  float St[16][4];
  const int init = meta[kInitSlot];
  if (init >= 0) {
    const float* src = p.pool + int64_t(init) * p.slot_stride + head_off;
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      const int kd = 8 * nt + 2 * t;
      St[nt][0] = src[kd * kD + vr0];
      St[nt][1] = src[(kd + 1) * kD + vr0];
      St[nt][2] = src[kd * kD + vr0 + 8];
      St[nt][3] = src[(kd + 1) * kD + vr0 + 8];
    }
  } else {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) St[nt][0] = St[nt][1] = St[nt][2] = St[nt][3] = 0.0f;
  }
  __syncthreads();  // barriers initialised

  // Everything addressed in the loop is set up here, once: the per-lane byte offsets of the
  // ldmatrix rows inside a stage (a 128-wide swizzled tile has four distinct patterns per lane;
  // k-steps 4..7 are 128 bytes further), the global source and shared destination of this thread's
  // value-tile pieces, and its output rows. The loop then only adds stage bases and strides.
  const uint32_t smem0 = smem_addr(smem_raw);
  constexpr uint32_t kStageBytes = sizeof(Stage);
  uint32_t off_kq[4], off_kt[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    off_kq[j] = 2 * swz128((mat / 2) * 8 + rr, 16 * j + (mat % 2) * 8);
    off_kt[j] = 2 * swz128((mat % 2) * 8 + rr, 8 * (2 * j + mat / 2));
  }
  const uint32_t off_am = 2 * swz16((mat / 2) * 8 + rr, (mat % 2) * 8);

  // Loads of chunk c into stage s: the record (one bulk copy by thread 0) and this CTA's value
  // tile (cp.async: kPer 16-byte pieces per thread), zero-filled past the sequence's end. Chunks
  // are issued in order, so each piece's source advances by one chunk of rows per issue.
  const uint8_t* rec0 = p.records + (int64_t(h) * p.n_chunks + meta[kChunk0]) * kRecordBytes;
  constexpr int kPerRow = Stage::kVCols * int(sizeof(T)) / 16;  // pieces per token row
  constexpr int kPer = kC * kPerRow / (kWarps * 32);            // pieces per thread (1 or 2)
  static_assert(kPer * kWarps * 32 == kC * kPerRow);
  const int64_t v_step = int64_t(kC) * p.v_stride;
  const T* vsrc[kPer];
  uint32_t vdst[kPer];
  int vrow[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int i = threadIdx.x + j * kWarps * 32, r = i / kPerRow, col = (i % kPerRow) * (16 / int(sizeof(T)));
    vrow[j] = r;
    vsrc[j] = static_cast<const T*>(p.v) + (row0 + r) * p.v_stride + int64_t(h) * kD + v0 + col;
    vdst[j] = uint32_t(offsetof(Stage, V)) + uint32_t(r * Stage::kVLd + col) * uint32_t(sizeof(T));
  }
  int issued = 0;  // chunks issued so far
  auto issue = [&](int s) {
    if (threadIdx.x == 0) {
      mbar_arrive_expect_tx(&bars[s], kRecordBytes);
      bulk_copy_to_shared(stages[s].rec, rec0 + int64_t(issued) * kRecordBytes, kRecordBytes, &bars[s]);
    }
    const uint32_t base = smem0 + uint32_t(s) * kStageBytes;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const bool valid = issued * kC + vrow[j] < len;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(base + vdst[j]),
                   "l"(valid ? vsrc[j] : static_cast<const T*>(p.v)), "r"(valid ? 16 : 0));
      vsrc[j] += v_step;
    }
    ++issued;
  };
  for (int s = 0; s < depth - 1; ++s) {
    if (s < nch) issue(s);
    cp_async_commit();
  }

  int ck = meta[kCk0];
  const int ck_end = meta[kCk1];
  int ck_next = ck < ck_end ? p.ck_chunk[ck] : -1;  // chunk after which the next checkpoint is due
  // Output element (token 2t + e + 8 nt, value row vr0 + 8 i) of chunk c at orow + c·16·stride
  // + (e + 8 nt)·stride + 8 i.
  T* orow = static_cast<T*>(p.o) + (row0 + 2 * t) * p.o_stride + int64_t(h) * kD + vr0;
  const int64_t o_step = int64_t(kC) * p.o_stride, os1 = p.o_stride, os8 = 8 * p.o_stride, os9 = os8 + os1;
  int s = 0, s_prev = depth - 1;  // stage of chunk c, and of chunk c - 1 (refilled with c + depth - 1)
  uint32_t parity = 0;            // of stage s's barrier for chunk c
  for (int c = 0; c < nch; ++c) {
    cp_async_wait_upto(depth - 2);
    __syncthreads();  // value tile c visible; stage s_prev is free again
    if (issued < nch) issue(s_prev);
    cp_async_commit();
    mbar_wait(&bars[s], parity);
    const Stage& st = stages[s];
    const uint32_t rec = smem0 + uint32_t(s) * kStageBytes;
    const float* gamma = reinterpret_cast<const float*>(st.rec + kOffGamma);

    // Xᵀ and the first output term: Sᵀ K̂ᵀ and Sᵀ Q̂ᵀ (two interleaved accumulation chains each).
    float xa[2][2][4] = {}, oa[2][2][4] = {};
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const uint32_t a[4] = {pack_bf16(St[2 * ks][0], St[2 * ks][1]), pack_bf16(St[2 * ks][2], St[2 * ks][3]),
                             pack_bf16(St[2 * ks + 1][0], St[2 * ks + 1][1]),
                             pack_bf16(St[2 * ks + 1][2], St[2 * ks + 1][3])};
      uint32_t kb[4], qb[4];
      const uint32_t off = off_kq[ks % 4] + (ks / 4) * 128;
      ldmatrix_x4_at(kb, rec + kOffKhat + off);
      ldmatrix_x4_at(qb, rec + kOffQhat + off);
      mma_16816(xa[ks & 1][0], a, kb[0], kb[1]);
      mma_16816(xa[ks & 1][1], a, kb[2], kb[3]);
      mma_16816(oa[ks & 1][0], a, qb[0], qb[1]);
      mma_16816(oa[ks & 1][1], a, qb[2], qb[3]);
    }
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
    // Ṽᵀ = Xᵀ Aᵀ
    const uint32_t xf[4] = {pack_bf16(x[0][0], x[0][1]), pack_bf16(x[0][2], x[0][3]),
                            pack_bf16(x[1][0], x[1][1]), pack_bf16(x[1][2], x[1][3])};
    uint32_t ab[4], mb[4];
    ldmatrix_x4_at(ab, rec + kOffA + off_am);
    ldmatrix_x4_at(mb, rec + kOffM + off_am);
    float vt[2][4] = {};
    mma_16816(vt[0], xf, ab[0], ab[1]);
    mma_16816(vt[1], xf, ab[2], ab[3]);
    const uint32_t vf[4] = {pack_bf16(vt[0][0], vt[0][1]), pack_bf16(vt[0][2], vt[0][3]),
                            pack_bf16(vt[1][0], vt[1][1]), pack_bf16(vt[1][2], vt[1][3])};
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
    // Sᵀ ← Sᵀ Diag(γ) + Ṽᵀ K̃
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      const float2 gm = *reinterpret_cast<const float2*>(&gamma[8 * nt + 2 * t]);
      St[nt][0] *= gm.x, St[nt][1] *= gm.y, St[nt][2] *= gm.x, St[nt][3] *= gm.y;
    }
#pragma unroll
    for (int np = 0; np < 8; ++np) {
      uint32_t kb[4];
      ldmatrix_x4_trans_at(kb, rec + kOffKtil + off_kt[np % 4] + (np / 4) * 128);
      mma_16816(St[2 * np], vf, kb[0], kb[1]);
      mma_16816(St[2 * np + 1], vf, kb[2], kb[3]);
    }
    while (ck_next == c) {
      store_state(p.pool + int64_t(p.ck_slot[ck]) * p.slot_stride + head_off, St, vr0);
      ++ck;
      ck_next = ck < ck_end ? p.ck_chunk[ck] : -1;
    }
    s_prev = s;
    if (++s == depth) s = 0, parity ^= 1u;
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
  static int sms = [] {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 132;
  }();
  return n_seq_heads >= 2 * sms ? 8 : 4;
}

// K2 pipeline stages: env DS_KDA_K2_STAGES (2 .. kMaxStages), else 3.
int k2_stages() {
  if (const char* e = std::getenv("DS_KDA_K2_STAGES")) {
    const int s = std::atoi(e);
    if (s >= 2 && s <= kMaxStages) return s;
  }
  return 3;
}

template <class T, int kWarps>
void launch_k2(const K2Params& p, int pieces, int H, cudaStream_t stream) {
  const size_t smem = sizeof(K2Stage<T, kWarps>) * p.stages + p.stages * sizeof(uint64_t);
  check(cudaFuncSetAttribute(kda_recurrence_kernel<T, kWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(smem)),
        "kda_prefill: shared memory limit");
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
    else
      std::fprintf(stderr,
                   "kda_prefill timing: setup %.3f ms, prep + recurrence in %d overlapped segments %.3f ms\n",
                   t[0], segments, t[1]);
    for (int i = 0; i < n; ++i) cudaEventDestroy(ev[i]);
  }
};

template <class T>
void launch_recurrence(const KdaPrefillLaunch& a, const int* d_blob, const uint8_t* d_records,
                       const KdaPrefillPlan& plan, int s, int warps, cudaStream_t stream) {
  const int first = plan.piece_begin[size_t(s)], pieces = plan.piece_begin[size_t(s) + 1] - first;
  if (pieces == 0) return;
  const K2Params p2{d_records,
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
                    k2_stages()};
  switch (warps) {
    case 8:
      return launch_k2<T, 8>(p2, pieces, a.H, stream);
    case 4:
      return launch_k2<T, 4>(p2, pieces, a.H, stream);
    default:
      return launch_k2<T, 2>(p2, pieces, a.H, stream);
  }
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
  const KdaPrefillPlan plan = plan_kda_prefill(a, prefill_segments(a));
  const int S = plan.segments();
  int* d_blob = nullptr;
  uint8_t* d_records = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d_blob), plan.blob.size() * sizeof(int) + 16, stream),
        "kda_prefill: metadata allocation");
  check(cudaMemcpyAsync(d_blob, plan.blob.data(), plan.blob.size() * sizeof(int), cudaMemcpyHostToDevice,
                        stream),
        "kda_prefill: metadata upload");
  if (plan.n_chunks > 0)
    check(cudaMallocAsync(reinterpret_cast<void**>(&d_records), size_t(a.H) * plan.n_chunks * kRecordBytes,
                          stream),
          "kda_prefill: workspace allocation");
  timer.mark(stream);
  const int warps = k2_warps(int64_t(plan.piece_begin[1]) * a.H);
  auto launch_prep = [&](int s, cudaStream_t st) {
    const int64_t c0 = plan.chunk_begin[size_t(s)];
    launch_kda_prep<T>(a, reinterpret_cast<const int2*>(d_blob), d_records, plan.n_chunks, c0,
                       plan.chunk_begin[size_t(s) + 1] - c0, st);
  };
  if (S == 1) {
    launch_prep(0, stream);
    timer.mark(stream);
    launch_recurrence<T>(a, d_blob, d_records, plan, 0, warps, stream);
  } else {
    // Prep kernels on the caller's stream, recurrences on a second stream of higher priority, each
    // recurrence after its segment's prep: the recurrence of segment s overlaps the prep of s + 1.
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "kda_prefill: stream priorities");
    cudaStream_t rec = nullptr;
    check(cudaStreamCreateWithPriority(&rec, cudaStreamNonBlocking, greatest), "kda_prefill: stream");
    std::vector<cudaEvent_t> ready(size_t(S) + 1, nullptr);
    for (cudaEvent_t& e : ready)
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "kda_prefill: event");
    for (int s = 0; s < S; ++s) {
      launch_prep(s, stream);
      check(cudaEventRecord(ready[size_t(s)], stream), "kda_prefill: event record");
      check(cudaStreamWaitEvent(rec, ready[size_t(s)]), "kda_prefill: stream wait");
      launch_recurrence<T>(a, d_blob, d_records, plan, s, warps, rec);
    }
    check(cudaEventRecord(ready[size_t(S)], rec), "kda_prefill: event record");
    check(cudaStreamWaitEvent(stream, ready[size_t(S)]), "kda_prefill: stream wait");
    for (cudaEvent_t e : ready) cudaEventDestroy(e);
    cudaStreamDestroy(rec);  // released once its work is done
  }
  timer.mark(stream);
  timer.report(S);
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
