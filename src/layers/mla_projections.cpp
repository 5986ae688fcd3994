#include "layers/mla_projections.h"

#include <vector>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/linear.h"
#include "layers/low_rank_proj.h"

namespace ds {

void MlaQueryProj::validate(int64_t hidden, int64_t q_out) const {
  check_full_or_low_rank(q_proj, q_a, q_b, q_out, hidden,
                         {"mla: both q_proj and q_a/q_b set", "mla q_proj", "mla q_a_proj", "mla q_b_proj"});
  if (!lora()) return;
  DS_CHECK(q_a_norm.size() == size_t(q_a.rows), "mla q_a_layernorm.weight: {} values, expected {}",
           q_a_norm.size(), q_a.rows);
}

void MlaQueryProj::forward(const float* x, int64_t T, float* q) const {
  project_full_or_low_rank(q_proj, q_a, q_b, lora() ? q_a_norm.data() : nullptr, eps, x, T, q);
}

void mla_output_gate(const WeightView& g_proj, const float* x, int64_t T, float* attn) {
  check_weight(g_proj, "mla g_proj");
  std::vector<float> g(size_t(T * g_proj.rows));
  linear(f32_rows(x, T, g_proj.cols), g_proj, f32_rows(g.data(), T, g_proj.rows));
  for (size_t i = 0; i < g.size(); ++i) attn[i] *= sigmoidf(g[i]);
}

}  // namespace ds
