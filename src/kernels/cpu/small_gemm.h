// Internal to src/kernels/cpu: single-threaded f32 GEMM for the small, L1/L2-resident blocks of
// the chunked KDA kernel (called inside per-head OpenMP tasks, where OpenBLAS must not be used).
// C[m, n] = beta_c · C + alpha · A[m, k] · B[k, n], all row-major with leading dimensions.
#pragma once

#include <cstdint>

namespace ds::cpu {

// beta_c is 0 (overwrite) or 1 (accumulate); alpha scales the product. Any m, n, k >= 0.
void small_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                int64_t ldb, float beta_c, float* C, int64_t ldc);

// Plain triple loop, for tests.
void small_gemm_ref(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                    int64_t ldb, float beta_c, float* C, int64_t ldc);

}  // namespace ds::cpu
