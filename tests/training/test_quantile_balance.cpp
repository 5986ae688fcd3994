// Quantile Balancing: loads under a bias, one update against a hand computation, exact balance, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/check.h"
#include "training/quantile_balance.h"

using namespace ds;

namespace {

// Sigmoid router scores with a per-expert popularity skew, so the unbiased routing is unbalanced.
std::vector<float> skewed_scores(std::mt19937& rng, int m, int n, float skew) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> pop(n), s(size_t(m) * n);
  for (float& p : pop) p = skew * nd(rng);
  for (int t = 0; t < m; ++t)
    for (int j = 0; j < n; ++j) s[size_t(t) * n + j] = 1.0f / (1.0f + std::exp(-(2.0f * nd(rng) + pop[j])));
  return s;
}

}  // namespace

TEST(K3QuantileBalance, LoadsCountTopKOfBiasedScores) {
  // 3 tokens, 3 experts, top-1: bias only changes selection.
  const std::vector<float> s{0.9f, 0.5f, 0.1f,  //
                             0.8f, 0.7f, 0.2f,  //
                             0.1f, 0.2f, 0.3f};
  const RouterScores r{s, 3, 3};
  const std::vector<float> zero(3, 0.0f), b{-0.15f, 0.0f, 0.0f};
  EXPECT_EQ(expert_loads(r, 1, zero), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(expert_loads(r, 1, b), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(expert_loads(r, 2, zero), (std::vector<int>{2, 3, 1}));
}

TEST(K3QuantileBalance, OneStepMatchesHandComputedUpdate) {
  // m = 4 tokens, n = 2 experts, top-1, q = 2; every token prefers expert 0 at zero bias.
  // Cutoffs c = 2nd largest = [0.1, 0.3, 0.6, 0.45]; margins M_0 = [0.8, 0.5, 0.1, 0.05], M_1 = 0;
  // b̂ = -(3rd largest) = [-0.1, 0]; centred: [-0.05, 0.05].
  const std::vector<float> s{0.9f, 0.1f, 0.8f, 0.3f, 0.7f, 0.6f, 0.5f, 0.45f};
  const RouterScores r{s, 4, 2};
  const std::vector<float> b = quantile_balance_step(r, 1, std::vector<float>(2, 0.0f));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0], -0.05f, 1e-7f);
  EXPECT_NEAR(b[1], 0.05f, 1e-7f);
  EXPECT_EQ(expert_loads(r, 1, std::vector<float>(2, 0.0f)), (std::vector<int>{4, 0}));
  const QuantileBalanceResult res = quantile_balance(r, 1, {});
  ASSERT_TRUE(res.balanced);
  EXPECT_EQ(expert_loads(r, 1, res.bias), (std::vector<int>{2, 2}));
  // Tokens 0, 1 keep expert 0 (largest lead), tokens 2, 3 move to expert 1.
  EXPECT_GT(s[2] + res.bias[0], s[3] + res.bias[1]);
  EXPECT_LT(s[4] + res.bias[0], s[5] + res.bias[1]);
}

TEST(K3QuantileBalance, IteratedBiasBalancesRoutingExactly) {
  std::mt19937 rng(2026);
  struct Case {
    int m, n, k;
    float skew;
  };
  for (const Case& c :
       {Case{1024, 16, 4, 1.0f}, Case{512, 16, 4, 2.0f}, Case{1024, 32, 8, 1.0f}, Case{224, 112, 16, 0.5f}}) {
    const std::vector<float> s = skewed_scores(rng, c.m, c.n, c.skew);
    const RouterScores r{s, c.m, c.n};
    const auto before = expert_loads(r, c.k, std::vector<float>(c.n, 0.0f));
    const int q = c.m * c.k / c.n;
    ASSERT_NE(*std::max_element(before.begin(), before.end()), q);  // unbalanced to start with
    const QuantileBalanceResult res = quantile_balance(r, c.k, {}, 200);
    EXPECT_TRUE(res.balanced) << c.m << "x" << c.n << " top-" << c.k << " after " << res.iterations;
    const auto loads = expert_loads(r, c.k, res.bias);
    for (int j = 0; j < c.n; ++j) EXPECT_EQ(loads[j], q) << "expert " << j;
    std::printf("QB %dx%d top-%d: balanced after %d updates (max load before %d, q %d)\n", c.m, c.n, c.k,
                res.iterations, *std::max_element(before.begin(), before.end()), q);
  }
}

TEST(K3QuantileBalance, BadInputThrows) {
  const std::vector<float> s(12, 0.5f);
  EXPECT_THROW(quantile_balance_step(RouterScores{s, 4, 3}, 3, std::vector<float>(3)), Error);  // k == n
  EXPECT_THROW(quantile_balance_step(RouterScores{s, 4, 3}, 1, std::vector<float>(2)), Error);  // bias size
  EXPECT_THROW(quantile_balance_step(RouterScores{s, 4, 3}, 1, std::vector<float>(3)), Error);  // 3 ∤ 4
  EXPECT_THROW(expert_loads(RouterScores{s, 5, 3}, 1, std::vector<float>(3)), Error);           // shape
}
