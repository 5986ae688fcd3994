// The flash MLA prefill kernel alone at a model's MLA shape (`bench_gpu_model --mla-flash`): the last
// chunk of a prefill of L tokens (its T query rows after L - T cached keys) through every pipeline form
// of mla_attention_expanded, in ms and TFLOP/s of the causal products.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace ds::bench {

void run_mla_flash_bench(const ModelConfig& c, int chunk, const std::vector<int>& lengths);

}  // namespace ds::bench
