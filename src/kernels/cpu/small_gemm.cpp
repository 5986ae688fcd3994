#include "kernels/cpu/small_gemm.h"

#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

void small_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                int64_t ldb, float beta_c, float* C, int64_t ldc) {
  cpu::kernels().small_gemm(m, n, k, alpha, A, lda, B, ldb, beta_c, C, ldc);
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

}  // namespace ds::cpu
