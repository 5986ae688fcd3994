// Quantile Balancing: the training-time router-bias update of Kimi K3 (Kimi K3 tech report, arXiv
// 2607.24653 §2.3.3; J. Su, kexue.fm/archives/11760), as a library for operators recalibrating
// `e_score_correction_bias` on their own traffic. Selection uses s + b, mixture weights use s; the
// bias that admits exactly q = m·k/n tokens per expert is the fixed point of the QB update. Inference never
// calls this: the bias is a constant of the checkpoint.
#pragma once

#include <span>
#include <vector>

namespace ds {

// Router scores of a batch: s f32 [m, n] (post-sigmoid, unbiased), row-major.
struct RouterScores {
  std::span<const float> s;
  int n_tokens = 0;                // m
  int n_experts = 0;               // n
  void validate(int top_k) const;  // shape consistent, 0 < top_k < n; throws ds::Error
};

// Tokens per expert when each token picks the top-k of s + bias (ties: lower expert index first,
// like a stable sort). bias f32 [n]. Returns int [n].
std::vector<int> expert_loads(const RouterScores& r, int top_k, std::span<const float> bias);

// One QB update (steps 1-4 of the report's update): c_t = (k+1)-th largest of s_t + bias; M_tj = s_tj − c_t;
// b̂_j = −((q+1)-th largest of M_·j) with q = m·k/n (requires n | m·k); returns b̂ − mean(b̂).
std::vector<float> quantile_balance_step(const RouterScores& r, int top_k, std::span<const float> bias);

struct QuantileBalanceResult {
  std::vector<float> bias;  // f32 [n], centred
  int iterations = 0;       // updates applied (QB steps, then exact sweeps over all experts)
  bool balanced = false;    // expert_loads(bias) == q for every expert
};

// The bias under which top-k routing of this batch admits exactly q tokens per expert: from
// `initial_bias` (empty: zeros), a few QB updates, then sweeps of exact per-expert updates (b_j midway
// between the q-th and (q+1)-th margin against the k-th best other expert) until balanced or
// `max_iterations` updates. The plain QB update alone is a one-shot estimator: its cutoffs are those
// of the previous bias and, iterated, it oscillates around balance instead of reaching it.
QuantileBalanceResult quantile_balance(const RouterScores& r, int top_k, std::span<const float> initial_bias,
                                       int max_iterations = 100);

}  // namespace ds
