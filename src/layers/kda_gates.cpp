#include "layers/kda_gates.h"

#include <cmath>

#include "core/check.h"
#include "kernels/activation.h"
#include "layers/low_rank_proj.h"

namespace ds {

std::vector<float> a_log_heads(std::span<const float> stored, int n_heads, const char* what) {
  DS_CHECK(n_heads > 0 && stored.size() >= size_t(n_heads), "{}: A_log has {} values for {} heads", what,
           stored.size(), n_heads);
  return std::vector<float>(stored.begin(), stored.begin() + n_heads);
}

void KdaOutputGate::validate(int64_t hidden, int64_t p) const {
  check_full_or_low_rank(
      g_proj, g_a, g_b, p, hidden,
      {"kda output gate: both g_proj and g_a/g_b set", "kda g_proj", "kda g_a_proj", "kda g_b_proj"});
}

void KdaOutputGate::logits(const float* x, int64_t T, float* r) const {
  project_full_or_low_rank(g_proj, g_a, g_b, /*norm_w=*/nullptr, 0.0f, x, T, r);
}

}  // namespace ds
