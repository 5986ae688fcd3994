#include "exec/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

uint64_t sampling_seed(const SamplingParams& params, int64_t request_id) {
  return params.seed ? *params.seed : splitmix64(static_cast<uint64_t>(request_id) ^ 0x5eed5eedull);
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& p, uint64_t seed, int64_t position,
                     const char* what) {
  const int64_t V = static_cast<int64_t>(logits.size());
  DS_CHECK(V > 0, "sampler: empty {}", what);
  int64_t best = 0;
  for (int64_t i = 0; i < V; ++i) {
    DS_CHECK(std::isfinite(logits[size_t(i)]), "sampler: {} value {} at token {} is not finite", what,
             logits[size_t(i)], i);
    if (logits[size_t(i)] > logits[size_t(best)]) best = i;
  }
  if (p.greedy()) return static_cast<int32_t>(best);

  // Probabilities (unnormalised) of the temperature-scaled distribution, most likely first.
  const double inv_t = 1.0 / double(p.temperature);
  const double top = double(logits[size_t(best)]);
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  auto more_likely = [&](int32_t a, int32_t b) {
    return logits[size_t(a)] != logits[size_t(b)] ? logits[size_t(a)] > logits[size_t(b)] : a < b;
  };
  int64_t n = V;
  if (p.top_k > 0 && p.top_k < V) {
    n = p.top_k;
    std::partial_sort(order.begin(), order.begin() + n, order.end(), more_likely);
  } else {
    std::sort(order.begin(), order.end(), more_likely);
  }
  std::vector<double> prob(static_cast<size_t>(n));
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += prob[size_t(i)] = std::exp((double(logits[size_t(order[size_t(i)])]) - top) * inv_t);
  if (p.top_p < 1.0f) {  // smallest prefix reaching top_p of the (top-k) mass
    double cum = 0;
    int64_t keep = 0;
    while (keep < n && cum < double(p.top_p) * total) cum += prob[size_t(keep++)];
    n = std::max<int64_t>(keep, 1);
  }
  if (p.min_p > 0.0f) {  // prob[0] is the most likely token's
    const double floor = double(p.min_p) * prob[0];
    int64_t keep = 1;
    while (keep < n && prob[size_t(keep)] >= floor) ++keep;
    n = keep;
  }
  double kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += prob[size_t(i)];
  // u in [0, 1) from the top 53 bits of a hash of (seed, position).
  const uint64_t h = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(position)));
  const double u = double(h >> 11) * 0x1.0p-53 * kept;
  double cum = 0;
  for (int64_t i = 0; i < n; ++i) {
    cum += prob[size_t(i)];
    if (u < cum) return order[size_t(i)];
  }
  return order[size_t(n - 1)];
}

bool samples_by_argmax(const SamplingParams& p) {
  // top-k 1 keeps only the most likely token (lowest id on ties), which is then drawn with certainty.
  return (p.greedy() || p.top_k == 1) && p.logprobs < 0;
}

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int k) {
  DS_CHECK(token >= 0 && size_t(token) < logits.size(), "logprobs: token {} outside {} logits", token,
           logits.size());
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : logits) mx = std::max(mx, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - double(mx));
  const double log_z = double(mx) + std::log(sum);
  TokenLogprobs out;
  out.logprob = float(double(logits[size_t(token)]) - log_z);
  k = std::clamp(k, 0, int(logits.size()));
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] != logits[size_t(b)] ? logits[size_t(a)] > logits[size_t(b)] : a < b;
  });
  for (int i = 0; i < k; ++i)
    out.top.emplace_back(ids[size_t(i)], float(double(logits[size_t(ids[size_t(i)])]) - log_z));
  return out;
}

void sample_plan(const SchedulePlan& plan, std::span<const std::vector<float>> logits, int64_t vocab,
                 StepResult& result, std::unordered_map<RequestId, std::vector<float>>* kept, const char* who,
                 std::span<const int32_t> argmax) {
  DS_CHECK(logits.size() == plan.seqs.size(), "{}: {} logits rows for {} scheduled sequences", who,
           logits.size(), plan.seqs.size());
  DS_CHECK(argmax.empty() || argmax.size() == plan.seqs.size(), "{}: {} argmax entries for {} sequences", who,
           argmax.size(), plan.seqs.size());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& s = plan.seqs[i];
    if (!s.samples) continue;
    DS_CHECK(s.sampling != nullptr, "{}: request {} samples without sampling parameters", who, s.request_id);
    if (!argmax.empty() && argmax[i] >= 0) {
      DS_CHECK(samples_by_argmax(*s.sampling) && kept == nullptr,
               "{}: request {} was sampled by argmax but needs its logits", who, s.request_id);
      DS_CHECK(argmax[i] < vocab, "{}: request {} argmax {} outside {} logits", who, s.request_id, argmax[i],
               vocab);
      result.sampled_tokens.push_back(argmax[i]);
      continue;
    }
    const std::vector<float>& row = logits[i];
    DS_CHECK(int64_t(row.size()) == vocab, "{}: request {} got {} logits", who, s.request_id, row.size());
    result.sampled_tokens.push_back(
        sample_token(row, *s.sampling, sampling_seed(*s.sampling, s.request_id), s.end, "logits"));
    if (s.sampling->logprobs >= 0) {
      result.logprobs.resize(result.sampled_tokens.size());
      result.logprobs.back() = token_logprobs(row, result.sampled_tokens.back(), s.sampling->logprobs);
    }
    if (kept != nullptr) {
      auto& k = (*kept)[s.request_id];
      k.insert(k.end(), row.begin(), row.end());
    }
  }
  if (!result.logprobs.empty()) result.logprobs.resize(result.sampled_tokens.size());
}

}  // namespace ds
