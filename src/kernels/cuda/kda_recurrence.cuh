// Internal to src/kernels/cuda: what the two forms of the KDA prefill's recurrence kernel share —
// kda_prefill.cu (each warp owns 16 value rows of the state over all 128 keys) and
// kda_prefill_split.cu (a pair of warps owns 16 value rows, each warp 64 of the keys): the
// pipeline stage, the kernel parameters, the state store, and the split form's launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/kda_prefill_record.cuh"
#include "kernels/cuda/mma.cuh"

namespace ds::cuda {
namespace kda_prefill_detail {

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

// One pipeline stage: a chunk's record and the CTA's kVCols value columns of its 16 tokens.
template <class T, int kVColsT>
struct K2Stage {
  static constexpr int kVCols = kVColsT;
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
  // Host side only: the launch asks for at least this much dynamic shared memory per CTA (unused by
  // the kernel), which caps the recurrence CTAs per multiprocessor and keeps prep CTAs off theirs.
  int reserve_smem_bytes;
  // Chained form (kda_prefill.cu): the prep kernel runs beside this one and counts the records it has
  // written per (head, window of 2^win_shift chunks) in win_count[h * n_windows + w]; a record is
  // copied only once its window is complete. Null: every record is already written.
  const int* win_count = nullptr;
  int win_shift = 0;
  int64_t n_windows = 0;
};

// Chained form: thread 0 of a recurrence CTA waits (acquire) until every record of chunk `chunk`'s
// window of head h has been written, then orders its later bulk copies (async proxy) after those
// writes. A wait that outlasts kChainWaitNs traps, so that a prep kernel that never runs beside the
// recurrence fails the call instead of hanging it (kda_prefill.cu bounds the recurrence CTAs so that
// the prep always has room; the trap is the backstop).
constexpr uint64_t kChainWaitNs = 10'000'000'000ull;
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// counts: the head's counters; chunk: index in the call's chunk table (of n_chunks).
__device__ __forceinline__ void wait_window(const int* counts, int win_shift, int n_chunks, int chunk) {
  const int w = chunk >> win_shift;
  const int want = min(1 << win_shift, n_chunks - (w << win_shift));
  const int* cnt = counts + w;
  int got;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(got) : "l"(cnt) : "memory");
  if (got < want) {
    const uint64_t t0 = global_ns();
    do {
      __nanosleep(64);
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(got) : "l"(cnt) : "memory");
      if (got < want && global_ns() - t0 > kChainWaitNs) __trap();
    } while (got < want);
  }
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Sᵀ fragment of this thread (kTiles n-tiles over keys k0 ..) -> S[kd][v] at `dst` ([K, V] layout).
template <int kTiles>
__device__ __forceinline__ void store_state(float* dst, const float (&St)[kTiles][4], int vr0, int k0 = 0) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    const int kd = k0 + 8 * nt + 2 * t;
    dst[kd * kD + vr0] = St[nt][0];
    dst[(kd + 1) * kD + vr0] = St[nt][1];
    dst[kd * kD + vr0 + 8] = St[nt][2];
    dst[(kd + 1) * kD + vr0 + 8] = St[nt][3];
  }
}

// Sᵀ fragment of this thread (kTiles n-tiles over keys k0 ..) <- S[kd][v] at `src` ([K, V] layout),
// or zeros when src is null (no initial state).
template <int kTiles>
__device__ __forceinline__ void load_state(float (&St)[kTiles][4], const float* src, int vr0, int k0 = 0) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    const int kd = k0 + 8 * nt + 2 * t;
    St[nt][0] = src ? src[kd * kD + vr0] : 0.0f;
    St[nt][1] = src ? src[(kd + 1) * kD + vr0] : 0.0f;
    St[nt][2] = src ? src[kd * kD + vr0 + 8] : 0.0f;
    St[nt][3] = src ? src[(kd + 1) * kD + vr0 + 8] : 0.0f;
  }
}

// Start of a piece: thread 0 initialises the stages' mbarriers, every thread loads its part of the
// initial state (slot meta[kInitSlot], or zeros), then the CTA synchronises.
template <int kTiles>
__device__ __forceinline__ void begin_piece(const K2Params& p, const int* meta, int64_t head_off,
                                            uint64_t* bars, float (&St)[kTiles][4], int vr0, int k0 = 0) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) mbar_init(&bars[s], 1);
    fence_barrier_init();
  }
  const int init = meta[kInitSlot];
  load_state(St, init >= 0 ? p.pool + int64_t(init) * p.slot_stride + head_off : nullptr, vr0, k0);
  __syncthreads();  // barriers initialised
}

// The loads of one CTA's chunks, in order, into its pipeline stages: the chunk's record (one bulk
// copy by thread 0, completing on the stage's mbarrier) and the CTA's value tile (cp.async, 16-byte
// pieces spread over the kThreads threads), zero-filled past the piece's end. Each thread's piece
// sources and destinations are set up once; an issue then only advances them by one chunk of rows.
template <class T, class Stage, int kThreads>
struct K2Loader {
  static constexpr int kPerRow = Stage::kVCols * int(sizeof(T)) / 16;  // pieces per token row
  static constexpr int kPieces = kC * kPerRow;
  static constexpr int kPer = (kPieces + kThreads - 1) / kThreads;  // pieces per thread, at most
  static constexpr bool kEven = kPer * kThreads == kPieces;         // every thread has kPer
  const uint8_t* rec0;
  const T* vzero;  // a valid address for the zero-filling copies
  int64_t v_step;
  int len, issued = 0;
  // Chained form (K2Params::win_count non-null): this head's window counters; the next chunk to
  // issue, as an index into the call's chunk table; the chunks below ready_end, known written.
  const int* counts;
  int win_shift, n_chunks, next_chunk, ready_end = 0;
  const T* vsrc[kPer];
  uint32_t vdst[kPer];
  int vrow[kPer];  // -1: no piece

  // Piece `meta` of head h, value columns [v0, v0 + Stage::kVCols).
  __device__ __forceinline__ K2Loader(const K2Params& p, const int* meta, int h_, int v0)
      : rec0(p.records + (int64_t(h_) * p.n_chunks + meta[kChunk0]) * kRecordBytes),
        vzero(static_cast<const T*>(p.v)),
        v_step(int64_t(kC) * p.v_stride),
        len(meta[kLen]),
        counts(p.win_count ? p.win_count + int64_t(h_) * p.n_windows : nullptr),
        win_shift(p.win_shift),
        n_chunks(int(p.n_chunks)),
        next_chunk(meta[kChunk0]) {
    const int64_t row0 = meta[kRow0];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads, r = i / kPerRow, col = (i % kPerRow) * (16 / int(sizeof(T)));
      vrow[j] = kEven || i < kPieces ? r : -1;
      vsrc[j] = vzero + (row0 + r) * p.v_stride + int64_t(h_) * kD + v0 + col;
      vdst[j] = uint32_t(offsetof(Stage, V)) + uint32_t(r * Stage::kVLd + col) * uint32_t(sizeof(T));
    }
  }

  // The next chunk into stage s (shared address stage_base, barrier bar).
  __device__ __forceinline__ void issue(uint8_t* rec_dst, uint32_t stage_base, uint64_t* bar) {
    if (threadIdx.x == 0) {
      if (counts && next_chunk >= ready_end) {
        wait_window(counts, win_shift, n_chunks, next_chunk);
        ready_end = ((next_chunk >> win_shift) + 1) << win_shift;
      }
      ++next_chunk;
      mbar_arrive_expect_tx(bar, kRecordBytes);
      bulk_copy_to_shared(rec_dst, rec0 + int64_t(issued) * kRecordBytes, kRecordBytes, bar);
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      if (kEven || vrow[j] >= 0) {
        const bool valid = issued * kC + vrow[j] < len;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(stage_base + vdst[j]),
                     "l"(valid ? vsrc[j] : vzero), "r"(valid ? 16 : 0));
      }
      vsrc[j] += v_step;
    }
    ++issued;
  }
};

// The stage pipeline of one CTA over a piece's nch chunks: the first depth − 1 chunks are issued at
// construction; wait() returns the stage of the next chunk once its record and value tile have
// arrived (and refills the stage of the chunk before it, free since the barrier), advance() moves on.
template <class T, class Stage, int kThreads>
struct K2Pipeline {
  K2Loader<T, Stage, kThreads> loads;
  Stage* stages;
  uint64_t* bars;
  uint32_t smem0;
  int depth, nch;
  int s = 0, s_prev;    // stage of chunk c, and of chunk c − 1 (refilled with chunk c + depth − 1)
  uint32_t parity = 0;  // of stage s's barrier for chunk c

  __device__ __forceinline__ K2Pipeline(const K2Params& p, const int* meta, int h, int v0, uint8_t* smem_raw,
                                        uint64_t* bars_)
      : loads(p, meta, h, v0),
        stages(reinterpret_cast<Stage*>(smem_raw)),
        bars(bars_),
        smem0(smem_addr(smem_raw)),
        depth(p.stages),
        nch(meta[kNChunks]),
        s_prev(p.stages - 1) {
    for (int i = 0; i < depth - 1; ++i) {
      if (i < nch) issue(i);
      cp_async_commit();
    }
  }
  __device__ __forceinline__ void issue(int i) {
    loads.issue(stages[i].rec, smem0 + uint32_t(i) * uint32_t(sizeof(Stage)), &bars[i]);
  }
  __device__ __forceinline__ int wait() {
    cp_async_wait_upto(depth - 2);
    __syncthreads();  // value tile visible; stage s_prev is free again
    if (loads.issued < nch) issue(s_prev);
    cp_async_commit();
    mbar_wait(&bars[s], parity);
    return s;
  }
  __device__ __forceinline__ uint32_t stage_addr(int i) const {
    return smem0 + uint32_t(i) * uint32_t(sizeof(Stage));
  }
  __device__ __forceinline__ void advance() {
    s_prev = s;
    if (++s == depth) s = 0, parity ^= 1u;
  }
};

// The checkpoints of a piece (table range [meta[kCk0], meta[kCk1]), sorted by chunk): after chunk c,
// emit() stores this thread's part of the state into every slot due then.
struct K2Checkpoints {
  float* pool;
  int64_t slot_stride;
  const int *ck_chunk, *ck_slot;
  int ck, ck_end, ck_next;  // ck_next: chunk after which the next checkpoint is due, or −1
  __device__ __forceinline__ K2Checkpoints(const K2Params& p, const int* meta)
      : pool(p.pool),
        slot_stride(p.slot_stride),
        ck_chunk(p.ck_chunk),
        ck_slot(p.ck_slot),
        ck(meta[kCk0]),
        ck_end(meta[kCk1]),
        ck_next(ck < ck_end ? ck_chunk[ck] : -1) {}
  template <int kTiles>
  __device__ __forceinline__ void emit(int c, const float (&St)[kTiles][4], int64_t head_off, int vr0,
                                       int k0 = 0) {
    while (ck_next == c) {
      store_state(pool + int64_t(ck_slot[ck]) * slot_stride + head_off, St, vr0, k0);
      ++ck;
      ck_next = ck < ck_end ? ck_chunk[ck] : -1;
    }
  }
};

// Per-lane ldmatrix byte offsets inside a stage: off_kq[j] for the A-side rows of k-step j of a
// 128-wide swizzled tile (K̂, Q̂), off_kt[j] for the transposed K̃ pairs of n-tiles 2j, 2j + 1; keys
// 64 .. 127 of every row are 128 bytes after keys 0 .. 63 (key_half 1). off_am for the 16×16 A, M.
struct K2Offsets {
  uint32_t off_kq[4], off_kt[4], off_am;
  __device__ __forceinline__ explicit K2Offsets(int key_half) {
    const int lane = threadIdx.x % 32, mat = lane / 8, rr = lane % 8;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      off_kq[j] = 2 * swz128((mat / 2) * 8 + rr, 16 * j + (mat % 2) * 8) + 128 * key_half;
      off_kt[j] = 2 * swz128((mat % 2) * 8 + rr, 8 * (2 * j + mat / 2)) + 128 * key_half;
    }
    off_am = 2 * swz16((mat / 2) * 8 + rr, (mat % 2) * 8);
  }
};

// xa += Sᵀ K̂ᵀ and oa += Sᵀ Q̂ᵀ over this thread's 8·kTiles keys (k-step ks into chain ks & 1) for
// the record at shared address rec.
template <int kTiles>
__device__ __forceinline__ void state_products(const float (&St)[kTiles][4], uint32_t rec,
                                               const K2Offsets& off, float (&xa)[2][2][4],
                                               float (&oa)[2][2][4]) {
#pragma unroll
  for (int ks = 0; ks < kTiles / 2; ++ks) {
    const uint32_t a[4] = {pack_bf16(St[2 * ks][0], St[2 * ks][1]), pack_bf16(St[2 * ks][2], St[2 * ks][3]),
                           pack_bf16(St[2 * ks + 1][0], St[2 * ks + 1][1]),
                           pack_bf16(St[2 * ks + 1][2], St[2 * ks + 1][3])};
    uint32_t kb[4], qb[4];
    const uint32_t o = off.off_kq[ks % 4] + (ks / 4) * 128;
    ldmatrix_x4_at(kb, rec + kOffKhat + o);
    ldmatrix_x4_at(qb, rec + kOffQhat + o);
    mma_16816(xa[ks & 1][0], a, kb[0], kb[1]);
    mma_16816(xa[ks & 1][1], a, kb[2], kb[3]);
    mma_16816(oa[ks & 1][0], a, qb[0], qb[1]);
    mma_16816(oa[ks & 1][1], a, qb[2], qb[3]);
  }
}

// Ṽᵀ = Xᵀ Aᵀ as a bf16 A fragment (x: two n-tiles of tokens); mb receives M's fragments.
__device__ __forceinline__ void pseudo_values(const float (&x)[2][4], uint32_t rec, const K2Offsets& off,
                                              uint32_t (&vf)[4], uint32_t (&mb)[4]) {
  const uint32_t xf[4] = {pack_bf16(x[0][0], x[0][1]), pack_bf16(x[0][2], x[0][3]),
                          pack_bf16(x[1][0], x[1][1]), pack_bf16(x[1][2], x[1][3])};
  uint32_t ab[4];
  ldmatrix_x4_at(ab, rec + kOffA + off.off_am);
  ldmatrix_x4_at(mb, rec + kOffM + off.off_am);
  float vt[2][4] = {};
  mma_16816(vt[0], xf, ab[0], ab[1]);
  mma_16816(vt[1], xf, ab[2], ab[3]);
  vf[0] = pack_bf16(vt[0][0], vt[0][1]), vf[1] = pack_bf16(vt[0][2], vt[0][3]);
  vf[2] = pack_bf16(vt[1][0], vt[1][1]), vf[3] = pack_bf16(vt[1][2], vt[1][3]);
}

// Sᵀ ← Sᵀ Diag(γ) + Ṽᵀ K̃ over this thread's 8·kTiles keys (gamma: their first key's γ).
template <int kTiles>
__device__ __forceinline__ void update_state(float (&St)[kTiles][4], const float* gamma,
                                             const uint32_t (&vf)[4], uint32_t rec, const K2Offsets& off) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    const float2 gm = *reinterpret_cast<const float2*>(&gamma[8 * nt + 2 * t]);
    St[nt][0] *= gm.x, St[nt][1] *= gm.y, St[nt][2] *= gm.x, St[nt][3] *= gm.y;
  }
#pragma unroll
  for (int np = 0; np < kTiles / 2; ++np) {
    uint32_t kb[4];
    ldmatrix_x4_trans_at(kb, rec + kOffKtil + off.off_kt[np % 4] + (np / 4) * 128);
    mma_16816(St[2 * np], vf, kb[0], kb[1]);
    mma_16816(St[2 * np + 1], vf, kb[2], kb[3]);
  }
}

// The key-split recurrence (kda_prefill_split.cu) over `pieces` pieces × H heads, `warps` (2, 4 or 8)
// warps per CTA.
template <class T>
void launch_k2_split(const K2Params& p, int pieces, int H, int warps, cudaStream_t stream);

}  // namespace kda_prefill_detail
}  // namespace ds::cuda
