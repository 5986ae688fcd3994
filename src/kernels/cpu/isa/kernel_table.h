// Internal to src/kernels/cpu: the compute bodies of the kernels, compiled once per instruction set
// and reached through a table of function pointers. The public kernels (linear.h, kda.h, ...)
// validate arguments, allocate scratch and split work over OpenMP threads, then call
// kernels().<body> from each thread.
//
// How the per-ISA builds work: isa/kernels_<isa>.cpp includes the standard headers first, then
// opens a target region (`#pragma GCC target` / `#pragma clang attribute`) and includes the
// vector layer vec_<isa>.h and the bodies (*_body.h) with DS_ISA set to its namespace name.
// Everything defined inside the region is compiled for that ISA and lives in ds::cpu::<isa>, so no
// inline function is shared between ISAs (no ODR mix-ups); standard-library code keeps the
// baseline target. The body headers include nothing themselves and compile only in that setting.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/kda.h"

namespace ds::cpu {

inline constexpr int64_t kKdaSub = 16;    // chunked KDA: sub-block rows (exact pairwise decay inside)
inline constexpr int64_t kGemmKc = 1024;  // linear GEMM: inputs per block
inline constexpr int64_t kGemmTb = 128;   // linear GEMM: tokens per block

// Row views of one KDA head inside the [T, H, D] inputs.
struct KdaHeadRows {
  const float *q, *k, *v, *g, *beta;
  int64_t ldk, ldv, ldb;  // row strides of q/k/g, v, beta (elements)
};

// Scratch of one head's chunk (chunk C, dims K, V), owned by the caller; sizes in floats:
// G, Khat, Qhat, Kr, Qr: C·K; U: C·V; L, A: C·C; Kd: kKdaSub·K; KdT: K·kKdaSub; Kt: K·C.
struct KdaChunkScratch {
  float *G, *Khat, *Qhat, *U, *L, *A, *Kd, *KdT, *Kr, *Qr, *Kt;
};

struct KernelTable {
  CpuIsa isa;
  int64_t lanes;          // f32 lanes per vector
  int64_t kda_tile_cols;  // value columns per kda_recurrent_tile task

  // y[t, r] (+)= x[t, :] · w[r, :] for output rows [r0, r1) and activation rows t < T.
  // x f32 [T, cols] (row stride xs), w [rows, cols] row-major, y f32 (row stride ys).
  void (*gemv_bf16)(const float* x, int64_t xs, int64_t T, const uint16_t* w, int64_t cols, int64_t r0,
                    int64_t r1, float* y, int64_t ys, bool acc);
  void (*gemv_f32)(const float* x, int64_t xs, int64_t T, const float* w, int64_t cols, int64_t r0,
                   int64_t r1, float* y, int64_t ys, bool acc);
  void (*bf16_to_f32)(const uint16_t* src, int64_t n, float* dst);  // exact widening

  // The same product for many activation rows (GEMM, any T): output features [n0, n1) of one
  // thread; scratch holds gemm_scratch_floats floats. Split n at multiples of gemm_nr.
  int64_t gemm_nr;
  int64_t gemm_scratch_floats;
  void (*gemm_bf16)(const float* x, int64_t xs, int64_t T, const uint16_t* w, int64_t cols, int64_t n0,
                    int64_t n1, float* y, int64_t ys, bool acc, float* scratch);
  void (*gemm_f32)(const float* x, int64_t xs, int64_t T, const float* w, int64_t cols, int64_t n0,
                   int64_t n1, float* y, int64_t ys, bool acc, float* scratch);

  // C[m, n] = beta_c · C + alpha · A[m, k] · B[k, n] (beta_c 0 or 1), single thread.
  void (*small_gemm)(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float beta_c, float* C, int64_t ldc);

  // Elementwise over n floats; y may alias the inputs.
  void (*exp)(const float* x, int64_t n, float* y);
  void (*silu)(const float* x, int64_t n, float* y);
  void (*sigmoid)(const float* x, int64_t n, float* y);
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* y);

  // Norms over rows of dim floats (contracts in norm.h); in place allowed.
  void (*rmsnorm)(const float* x, int64_t rows, int64_t dim, const float* w, float eps, float* y);
  void (*rmsnorm_gated_sigmoid)(const float* x, const float* gate, int64_t rows, int64_t dim, const float* w,
                                float eps, float* y);
  void (*l2norm_rows)(float* x, int64_t rows, int64_t dim, float eps);

  // One output row of the depthwise causal conv + SiLU: rows[j] is the input row at t − W + 1 + j,
  // tapsT f32 [W, C].
  void (*conv_silu_row)(const float* const* rows, const float* tapsT, int64_t C, int64_t W, float* y);

  // KDA recurrence over all d.T tokens for value columns [c0, c0 + width) of head h; width is a
  // multiple of `lanes` and at most kda_tile_cols; alpha: scratch of d.K floats.
  void (*kda_recurrent_tile)(const KdaDims& d, const KdaTensors& t, float scale, int64_t h, int64_t c0,
                             int64_t width, float* alpha);
  // One chunk of n tokens of one head (kda_chunked.cpp has the equations).
  void (*kda_chunk_head)(const KdaHeadRows& x, int64_t n, int64_t K, int64_t V, float scale, float* S,
                         float* o, int64_t ldo, const KdaChunkScratch& w);

  // Query rows [i0, i0 + m) of head h (attention.cpp); P: scratch of m · (n_kv − n_q + i0 + m).
  // Absorbed MLA decode attention of one sequence and head (kernels/attention.h); scratch:
  // n_kv + 2·R floats.
  void (*latent_attend_head)(const LatentAttnShape& s, const LatentAttnSeq& q, const float* w_kv_b,
                             float scale, int64_t h, float* scratch);
  void (*attend_block)(const AttnDims& d, int64_t h, int64_t i0, int64_t m, const float* q, int64_t qs,
                       const float* Kt, const float* v, int64_t vs, float scale, float* o, int64_t os,
                       float* P);
};

// The bodies compiled for `isa`. Throws ds::Error if this build has no such path (non-x86 builds
// have only the scalar one); the CPU must support it (cpu_isa_supported()).
const KernelTable& kernel_table(CpuIsa isa);

// The bodies of the active path (cpu_isa_active()).
const KernelTable& kernels();

// Per-ISA tables (isa/kernels_<isa>.cpp); nullptr where the build has no such path.
const KernelTable* kernel_table_scalar();
const KernelTable* kernel_table_avx2();
const KernelTable* kernel_table_avx512();

}  // namespace ds::cpu
