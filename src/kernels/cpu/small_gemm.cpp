#include "kernels/cpu/small_gemm.h"

#include <algorithm>

#include "kernels/cpu/simd.h"

namespace ds {

namespace {

// Rows [i0, i0+MR) x columns [j0, j0 + 16*NV) of C; MR rows share each B load, NV vectors share
// each broadcast of A. Accumulators are named through a fixed-size array that GCC scalarises
// (MR * NV <= 16 here).
template <int MR, int NV>
void micro(int64_t k, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta_c,
           float* C, int64_t ldc, __mmask16 last_mask) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      b[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last_mask : __mmask16(0xffff), B + p * ldb + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(A[r * lda + p]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
  }
  const __m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? last_mask : __mmask16(0xffff);
      float* c = C + r * ldc + 16 * v;
      __m512 x = _mm512_mul_ps(acc[r][v], al);
      if (beta_c != 0.0f) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, c));
      _mm512_mask_storeu_ps(c, m, x);
    }
}

template <int NV>
void row_panel(int64_t m, int64_t k, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
               float beta_c, float* C, int64_t ldc, __mmask16 last_mask) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4)
    micro<4, NV>(k, alpha, A + i * lda, lda, B, ldb, beta_c, C + i * ldc, ldc, last_mask);
  for (; i < m; ++i) micro<1, NV>(k, alpha, A + i * lda, lda, B, ldb, beta_c, C + i * ldc, ldc, last_mask);
}

}  // namespace

void small_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                int64_t ldb, float beta_c, float* C, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  for (int64_t j = 0; j < n; j += 64) {
    const int64_t w = std::min<int64_t>(64, n - j);
    const int64_t nv = (w + 15) / 16;
    const __mmask16 last = simd::tail_mask(w - 16 * (nv - 1));
    switch (nv) {
      case 4:
        row_panel<4>(m, k, alpha, A, lda, B + j, ldb, beta_c, C + j, ldc, last);
        break;
      case 3:
        row_panel<3>(m, k, alpha, A, lda, B + j, ldb, beta_c, C + j, ldc, last);
        break;
      case 2:
        row_panel<2>(m, k, alpha, A, lda, B + j, ldb, beta_c, C + j, ldc, last);
        break;
      default:
        row_panel<1>(m, k, alpha, A, lda, B + j, ldb, beta_c, C + j, ldc, last);
        break;
    }
  }
}

void small_gemm_ref(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                    int64_t ldb, float beta_c, float* C, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) acc += double(A[i * lda + p]) * double(B[p * ldb + j]);
      const float prod = float(acc) * alpha;
      C[i * ldc + j] = beta_c != 0.0f ? C[i * ldc + j] + prod : prod;
    }
}

}  // namespace ds
