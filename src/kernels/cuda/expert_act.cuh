// Internal to src/kernels/cuda: K3's SiTU-GLU on one (gate, up) pair in f32, for the row kernel and
// the expert kernels that form the GLU product in registers: [β₁ tanh(g/β₁) sigmoid(g)] · [β₂ tanh(u/β₂)] (β₂
// <= 0: u).
#pragma once

#include <cuda_runtime.h>

namespace ds::cuda {

__device__ __forceinline__ float situ_glu(float g, float u, float beta, float linear_beta) {
  const float gv = beta * tanhf(g / beta) * (1.0f / (1.0f + expf(-g)));
  return gv * (linear_beta > 0.0f ? linear_beta * tanhf(u / linear_beta) : u);
}

}  // namespace ds::cuda
