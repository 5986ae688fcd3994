// The routed experts' grouped GEMMs alone at a model's expert shapes (`bench_gpu_model --moe-gemm`):
// moe_gemm_glu + moe_gemm_down over T·k rows with uniform random routing, next to the same products
// as one cuBLASLt linear per active expert and matrix, in TFLOP/s.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace ds::bench {

void run_moe_gemm_bench(const ModelConfig& c, const std::vector<int>& token_counts);

}  // namespace ds::bench
