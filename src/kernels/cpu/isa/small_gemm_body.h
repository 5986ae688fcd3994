// Internal to src/kernels/cpu/isa: single-threaded f32 GEMM for small, cache-resident blocks (the
// chunked KDA kernel and attention), C[m, n] = beta_c · C + alpha · A[m, k] · B[k, n], row-major.
// Columns go in panels of kGemmVecs vectors, rows in micro-tiles of kGemmRows; MR rows share each
// B load and NV vectors share each broadcast of A.
#pragma once

namespace ds::cpu::DS_ISA {

// Rows [0, MR) × NV vectors of C; the last vector holds `last` lanes (masked when < kLanes).
template <int MR, int NV, bool kTail>
inline void gemm_micro(int64_t k, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                       float beta_c, float* C, int64_t ldc, int64_t last) {
  vf acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = vzero();
  for (int64_t p = 0; p < k; ++p) {
    vf b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      b[v] = kTail && v == NV - 1 ? vloadn(B + p * ldb + kLanes * v, last) : vload(B + p * ldb + kLanes * v);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const vf a = vset1(A[r * lda + p]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[r][v] = vfma(a, b[v], acc[r][v]);
    }
  }
  const vf al = vset1(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      float* c = C + r * ldc + kLanes * v;
      vf x = vmul(acc[r][v], al);
      if (kTail && v == NV - 1) {
        if (beta_c != 0.0f) x = vadd(x, vloadn(c, last));
        vstoren(c, x, last);
      } else {
        if (beta_c != 0.0f) x = vadd(x, vload(c));
        vstore(c, x);
      }
    }
}

template <int NV, bool kTail>
inline void gemm_panel(int64_t m, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                       int64_t ldb, float beta_c, float* C, int64_t ldc, int64_t last) {
  int64_t i = 0;
  for (; i + kGemmRows <= m; i += kGemmRows)
    gemm_micro<kGemmRows, NV, kTail>(k, alpha, A + i * lda, lda, B, ldb, beta_c, C + i * ldc, ldc, last);
  for (; i < m; ++i)
    gemm_micro<1, NV, kTail>(k, alpha, A + i * lda, lda, B, ldb, beta_c, C + i * ldc, ldc, last);
}

template <int NV>
inline void gemm_panel_any(int64_t m, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                           int64_t ldb, float beta_c, float* C, int64_t ldc, int64_t last) {
  if (last == kLanes)
    gemm_panel<NV, false>(m, k, alpha, A, lda, B, ldb, beta_c, C, ldc, last);
  else
    gemm_panel<NV, true>(m, k, alpha, A, lda, B, ldb, beta_c, C, ldc, last);
}

// Panels of nv <= NV vectors.
template <int NV>
inline void gemm_panel_nv(int64_t nv, int64_t m, int64_t k, float alpha, const float* A, int64_t lda,
                          const float* B, int64_t ldb, float beta_c, float* C, int64_t ldc, int64_t last) {
  if constexpr (NV > 1) {
    if (nv < NV) return gemm_panel_nv<NV - 1>(nv, m, k, alpha, A, lda, B, ldb, beta_c, C, ldc, last);
  }
  gemm_panel_any<NV>(m, k, alpha, A, lda, B, ldb, beta_c, C, ldc, last);
}

inline void small_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta_c, float* C, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  constexpr int64_t kPanel = kGemmVecs * kLanes;
  for (int64_t j = 0; j < n; j += kPanel) {
    const int64_t w = std::min<int64_t>(kPanel, n - j);
    const int64_t nv = (w + kLanes - 1) / kLanes, last = w - kLanes * (nv - 1);
    gemm_panel_nv<kGemmVecs>(nv, m, k, alpha, A, lda, B + j, ldb, beta_c, C + j, ldc, last);
  }
}

}  // namespace ds::cpu::DS_ISA
