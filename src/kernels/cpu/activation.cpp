#include "kernels/cpu/activation.h"

#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

void exp_array(const float* x, int64_t n, float* y) {
  cpu::kernels().exp(x, n, y);
}

void silu(const float* x, int64_t n, float* y) {
  cpu::kernels().silu(x, n, y);
}

void sigmoid(const float* x, int64_t n, float* y) {
  cpu::kernels().sigmoid(x, n, y);
}

void softplus(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = softplusf(x[i]);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  cpu::kernels().silu_mul(gate, up, n, y);
}

}  // namespace ds::cpu
