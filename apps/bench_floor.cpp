#include "bench_floor.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/linear.h"

namespace ds::cli {

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

MeasuredFloor measure_floor() {
  MeasuredFloor m;
  {
    const size_t n = size_t(1) << 27;  // 1 GiB of uint64
    std::vector<uint64_t> a(n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = i;
    for (int r = 0; r < 5; ++r) {
      uint64_t sum = 0;
      const double t0 = now_s();
#pragma omp parallel for schedule(static) reduction(+ : sum)
      for (size_t i = 0; i < n; ++i) sum += a[i];
      const double dt = now_s() - t0;
      DS_CHECK(sum == uint64_t(n) * (n - 1) / 2, "bench: read-bandwidth checksum mismatch");
      m.read_gbs = std::max(m.read_gbs, double(n) * 8 / dt / 1e9);
    }
  }
  {
    const size_t n = size_t(1) << 28;  // 256 MiB
    std::vector<char> src(n, 1), dst(n, 0);
    for (int r = 0; r < 5; ++r) {
      const double t0 = now_s();
      std::memcpy(dst.data(), src.data(), n);
      m.copy_gbs = std::max(m.copy_gbs, double(n) / (now_s() - t0) / 1e9);
      src[size_t(r)] = char(r);  // keep the copies from being merged
    }
    DS_CHECK(dst[n - 1] == 1, "bench: copy checksum mismatch");
  }
  {
    const int N = 2048;
    std::vector<float> A(size_t(N) * N, 0.5f), B(A.size(), 0.25f), C(A.size());
    openblas_set_num_threads(omp_get_max_threads());
    for (int r = 0; r < 3; ++r) {
      const double t0 = now_s();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, A.data(), N, B.data(), N, 0.0f,
                  C.data(), N);
      m.sgemm_gflops = std::max(m.sgemm_gflops, 2.0 * N * N * N / (now_s() - t0) / 1e9);
    }
    m.blas_core = openblas_get_corename();
    const int64_t rows = 4096, cols = 2048, T = 1024;
    std::vector<float> w(size_t(rows * cols), 0.01f), x(size_t(T * cols), 0.5f), y(size_t(T * rows));
    const WeightView wv{w.data(), DType::F32, rows, cols};
    for (int r = 0; r < 3; ++r) {
      const double t0 = now_s();
      cpu::linear(x.data(), T, wv, y.data());
      m.linear_gflops = std::max(m.linear_gflops, 2.0 * rows * cols * T / (now_s() - t0) / 1e9);
    }
  }
  return m;
}

}  // namespace ds::cli
