#include "kernels/cpu/norm.h"

#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

void rmsnorm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y) {
  cpu::kernels().rmsnorm(x, rows, dim, weight, eps, y);
}

void rmsnorm_gated_sigmoid(const float* x, const float* gate, int64_t rows, int64_t dim, const float* weight,
                           float eps, float* y) {
  cpu::kernels().rmsnorm_gated_sigmoid(x, gate, rows, dim, weight, eps, y);
}

void l2norm_rows(float* x, int64_t rows, int64_t dim, float eps) {
  cpu::kernels().l2norm_rows(x, rows, dim, eps);
}

}  // namespace ds::cpu
