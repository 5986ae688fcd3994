// The machine's floor for `deltaserve bench forward`, measured: streaming read bandwidth and the
// f32 GEMM rate (OpenBLAS sgemm as this machine configures it, and this code's own linear()).
#pragma once

#include <string>

namespace ds::cli {

struct MeasuredFloor {
  double read_gbs = 0;       // streaming read, all OpenMP threads
  double copy_gbs = 0;       // memcpy of 256 MiB blocks, one thread (bytes copied per second)
  double sgemm_gflops = 0;   // OpenBLAS sgemm 2048³, all OpenMP threads
  double linear_gflops = 0;  // linear() on f32 weights [4096 x 2048], T = 1024
  std::string blas_core;     // OpenBLAS kernel family in use
};

// Streaming read: every OpenMP thread sums its share of a 1 GiB buffer (integer adds, so the loop
// vectorises), best of 5. Copy: memcpy between two 256 MiB buffers, best of 5. GEMM rates: best
// of 3. Takes a few seconds.
MeasuredFloor measure_floor();

}  // namespace ds::cli
