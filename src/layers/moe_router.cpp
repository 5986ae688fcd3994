#include "layers/moe_router.h"

#include <algorithm>
#include <numeric>

#include "kernels/activation.h"

namespace ds {

MoeRouting route_sigmoid_topk(const MoeConfig& cfg, const std::vector<float>& correction_bias,
                              const float* router_logits, int64_t T) {
  const int E = cfg.n_expert, k = cfg.n_expert_per_token;
  MoeRouting r;
  r.k = k;
  r.expert.resize(size_t(T * k));
  r.weight.resize(size_t(T * k));
  std::vector<float> score(static_cast<size_t>(E)), sel(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int e = 0; e < E; ++e) {
      score[size_t(e)] = sigmoidf(router_logits[t * E + e]);
      sel[size_t(e)] = score[size_t(e)] + (correction_bias.empty() ? 0.0f : correction_bias[size_t(e)]);
    }
    std::iota(order.begin(), order.end(), 0);
    // Top-k by selection score, ties to the lower expert id.
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      return sel[size_t(a)] > sel[size_t(b)] || (sel[size_t(a)] == sel[size_t(b)] && a < b);
    });
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += score[size_t(order[size_t(j)])];
    const float norm = cfg.renormalize && k > 1 ? 1.0f / (sum + 1e-20f) : 1.0f;
    for (int j = 0; j < k; ++j) {
      r.expert[size_t(t * k + j)] = order[size_t(j)];
      r.weight[size_t(t * k + j)] = score[size_t(order[size_t(j)])] * norm * cfg.routed_scaling;
    }
  }
  return r;
}

}  // namespace ds
