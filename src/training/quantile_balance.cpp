#include "training/quantile_balance.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"

namespace ds {

void RouterScores::validate(int top_k) const {
  DS_CHECK(n_tokens > 0 && n_experts > 0, "quantile balance: bad shape [{}, {}]", n_tokens, n_experts);
  DS_CHECK(s.size() == size_t(n_tokens) * n_experts, "quantile balance: {} scores for shape [{}, {}]",
           s.size(), n_tokens, n_experts);
  DS_CHECK(top_k > 0 && top_k < n_experts, "quantile balance: top_k {} must be in [1, {})", top_k, n_experts);
}

namespace {

void check_bias(const RouterScores& r, std::span<const float> bias) {
  DS_CHECK(bias.size() == size_t(r.n_experts), "quantile balance: bias has {} entries for {} experts",
           bias.size(), r.n_experts);
}

// Expert order of token t by s + bias, best first (ties: lower index first).
void rank_token(const RouterScores& r, int t, std::span<const float> bias, std::vector<int>& order,
                std::vector<float>& sel) {
  const float* s = r.s.data() + size_t(t) * r.n_experts;
  for (int j = 0; j < r.n_experts; ++j) sel[j] = s[j] + bias[j];
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sel[a] > sel[b]; });
}

}  // namespace

std::vector<int> expert_loads(const RouterScores& r, int top_k, std::span<const float> bias) {
  r.validate(top_k);
  check_bias(r, bias);
  std::vector<int> loads(r.n_experts, 0), order(r.n_experts);
  std::vector<float> sel(r.n_experts);
  for (int t = 0; t < r.n_tokens; ++t) {
    rank_token(r, t, bias, order, sel);
    for (int i = 0; i < top_k; ++i) ++loads[order[i]];
  }
  return loads;
}

std::vector<float> quantile_balance_step(const RouterScores& r, int top_k, std::span<const float> bias) {
  r.validate(top_k);
  check_bias(r, bias);
  const long mk = long(r.n_tokens) * top_k;
  DS_CHECK(mk % r.n_experts == 0, "quantile balance: m*k = {}*{} is not a multiple of n = {}", r.n_tokens,
           top_k, r.n_experts);
  const int q = int(mk / r.n_experts);  // target tokens per expert; q < m since k < n
  const int m = r.n_tokens, n = r.n_experts;
  // Margins, stored column-major so each expert's column is contiguous: M f32 [n, m].
  std::vector<float> margin(size_t(n) * m), sel(n);
  std::vector<int> order(n);
  for (int t = 0; t < m; ++t) {
    rank_token(r, t, bias, order, sel);
    const float cutoff = sel[order[top_k]];  // (k+1)-th largest of s_t + b
    const float* s = r.s.data() + size_t(t) * n;
    for (int j = 0; j < n; ++j) margin[size_t(j) * m + t] = s[j] - cutoff;
  }
  std::vector<float> b(n);
  double mean = 0.0;
  for (int j = 0; j < n; ++j) {
    float* col = margin.data() + size_t(j) * m;
    std::nth_element(col, col + q, col + m, std::greater<float>());  // (q+1)-th largest at index q
    b[j] = -col[q];
    mean += b[j];
  }
  mean /= n;
  for (float& v : b) v = float(v - mean);
  return b;
}

namespace {

// Exact coordinate update: the b_j that makes exactly q tokens rank expert j in their top-k, the
// other biases fixed. Token t takes j iff s_tj + b_j > r_t, r_t = k-th largest of s_t + b over the
// other experts; b_j is put midway between the q-th and (q+1)-th largest s_tj − r_t (no ties).
void balance_expert(const RouterScores& r, int top_k, int q, int j, std::vector<float>& bias) {
  const int m = r.n_tokens, n = r.n_experts;
  std::vector<float> others(n - 1), d(m);
  for (int t = 0; t < m; ++t) {
    const float* s = r.s.data() + size_t(t) * n;
    for (int i = 0, o = 0; i < n; ++i)
      if (i != j) others[o++] = s[i] + bias[i];
    std::nth_element(others.begin(), others.begin() + (top_k - 1), others.end(), std::greater<float>());
    d[t] = s[j] - others[top_k - 1];
  }
  std::nth_element(d.begin(), d.begin() + q, d.end(), std::greater<float>());
  const float below = d[q];                                         // (q+1)-th largest
  const float above = *std::min_element(d.begin(), d.begin() + q);  // q-th largest
  bias[j] = -0.5f * (above + below);
}

}  // namespace

QuantileBalanceResult quantile_balance(const RouterScores& r, int top_k, std::span<const float> initial_bias,
                                       int max_iterations) {
  r.validate(top_k);
  QuantileBalanceResult res;
  res.bias.assign(initial_bias.begin(), initial_bias.end());
  if (res.bias.empty()) res.bias.assign(r.n_experts, 0.0f);
  check_bias(r, res.bias);
  const long mk = long(r.n_tokens) * top_k;
  DS_CHECK(mk % r.n_experts == 0, "quantile balance: m*k = {}*{} is not a multiple of n = {}", r.n_tokens,
           top_k, r.n_experts);
  const int q = int(mk / r.n_experts);
  auto is_balanced = [&] {
    const auto loads = expert_loads(r, top_k, res.bias);
    return std::all_of(loads.begin(), loads.end(), [&](int l) { return l == q; });
  };
  // Warm start with the plain QB update (a one-shot estimator: iterated on its own it oscillates, its
  // cutoffs being those of the previous bias), then exact per-expert sweeps until balanced.
  constexpr int kQbSteps = 3;
  while (!(res.balanced = is_balanced()) && res.iterations < max_iterations) {
    if (res.iterations < kQbSteps) {
      res.bias = quantile_balance_step(r, top_k, res.bias);
    } else {
      for (int j = 0; j < r.n_experts; ++j) balance_expert(r, top_k, q, j, res.bias);
      double mean = 0.0;
      for (float b : res.bias) mean += b;
      mean /= r.n_experts;
      for (float& b : res.bias) b = float(b - mean);
    }
    ++res.iterations;
  }
  return res;
}

}  // namespace ds
