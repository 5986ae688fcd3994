// small_gemm (the chunked-KDA block GEMM) against its triple-loop reference: awkward shapes,
// leading dimensions wider than the operands, alpha, overwrite and accumulate.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/small_gemm.h"
#include "test_util.h"

namespace ds::cpu {
namespace {

TEST(SmallGemm, MatchesReference) {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {16, 128, 128}, {64, 130, 33}, {7, 64, 0}};
  for (auto [m, n, k] : shapes) {
    for (float beta : {0.0f, 1.0f}) {
      SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k << " beta " << beta);
      const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
      const auto A = test::randn(size_t(m * lda), 1);
      const auto B = test::randn(size_t(std::max<int64_t>(k, 1) * ldb), 2);
      auto C = test::randn(size_t(m * ldc), 3);
      auto C_ref = C;
      small_gemm(m, n, k, -0.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      small_gemm_ref(m, n, k, -0.5f, A.data(), lda, B.data(), ldb, beta, C_ref.data(), ldc);
      EXPECT_LE(test::max_scaled_err(C.data(), C_ref.data(), C.size(), 1e-5, 1e-5), 1.0);
    }
  }
}

}  // namespace
}  // namespace ds::cpu
