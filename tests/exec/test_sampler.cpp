// Sampler: greedy is argmax (lowest id on ties), draws are a pure function of (seed, position),
// top-k / top-p / min-p keep exactly the tokens they should, temperature sharpens or flattens, and
// non-finite logits are an error.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/check.h"
#include "exec/sampler.h"

namespace ds {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 0.5f};  // ids 1 and 3 tie at the top

std::set<int32_t> drawn(const SamplingParams& p, int n = 2000) {
  std::set<int32_t> seen;
  for (int i = 0; i < n; ++i) seen.insert(sample_token(kLogits, p, 42, i));
  return seen;
}

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  EXPECT_EQ(sample_token(kLogits, SamplingParams{}, 1, 0), 1);
}

TEST(Sampler, DrawsArePureFunctionsOfSeedAndPosition) {
  SamplingParams p;
  p.temperature = 1.0f;
  std::vector<int32_t> a, b, c;
  for (int i = 0; i < 50; ++i) {
    a.push_back(sample_token(kLogits, p, 9, i));
    b.push_back(sample_token(kLogits, p, 9, i));
    c.push_back(sample_token(kLogits, p, 10, i));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(sampling_seed(SamplingParams{.seed = 5}, 1), 5u);
  EXPECT_NE(sampling_seed(SamplingParams{}, 1), sampling_seed(SamplingParams{}, 2));
}

TEST(Sampler, FiltersKeepExactlyTheirTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  EXPECT_EQ(drawn(p), (std::set<int32_t>{0, 1, 2, 3, 4, 5}));
  p.top_k = 3;  // 1, 3 (tied top) and 2
  EXPECT_EQ(drawn(p), (std::set<int32_t>{1, 2, 3}));
  p.top_k = 0;
  p.top_p = 0.5f;  // the first tied token holds 0.38 of the mass, the two together 0.77
  EXPECT_EQ(drawn(p), (std::set<int32_t>{1, 3}));
  p.top_p = 1.0f;
  p.min_p = 0.5f;  // keeps p >= 0.5 * p(top): ids 1, 3 (e^0) and 2 (e^-1 = 0.37 < 0.5: dropped)
  EXPECT_EQ(drawn(p), (std::set<int32_t>{1, 3}));
  p.min_p = 0.3f;
  EXPECT_EQ(drawn(p), (std::set<int32_t>{1, 2, 3}));
}

TEST(Sampler, TemperatureChangesHowOftenTheTopTokensWin) {
  auto top_share = [](float t) {
    SamplingParams p;
    p.temperature = t;
    int top = 0;
    for (int i = 0; i < 4000; ++i) {
      const int32_t tok = sample_token(kLogits, p, 3, i);
      top += tok == 1 || tok == 3;
    }
    return top / 4000.0;
  };
  EXPECT_GT(top_share(0.2f), 0.99);
  EXPECT_LT(top_share(5.0f), 0.5);
}

TEST(Sampler, NonFiniteLogitsAndBadParamsAreErrors) {
  std::vector<float> bad = kLogits;
  bad[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(sample_token(bad, SamplingParams{}, 1, 0), Error);
  EXPECT_THROW(SamplingParams{.temperature = -1.0f}.validate(), Error);
  EXPECT_THROW(SamplingParams{.top_p = 0.0f}.validate(), Error);
  EXPECT_THROW(SamplingParams{.min_p = 1.5f}.validate(), Error);
  EXPECT_THROW(SamplingParams{.top_k = -2}.validate(), Error);
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

// The executor's per-row choice: a row whose token is its logits' argmax (greedy, or top-k 1 at any
// temperature) and that asks for no log-probabilities may be sampled where the logits are.
TEST(Sampler, SamplesByArgmaxExactlyWhenTheTokenIsTheArgmax) {
  SamplingParams greedy, top1, hot, with_lp;
  top1.temperature = 1.5f, top1.top_k = 1, top1.top_p = 0.5f;
  hot.temperature = 0.7f;
  with_lp.logprobs = 0;
  EXPECT_TRUE(samples_by_argmax(greedy));
  EXPECT_TRUE(samples_by_argmax(top1));
  EXPECT_FALSE(samples_by_argmax(hot));
  EXPECT_FALSE(samples_by_argmax(with_lp));
  for (const SamplingParams& p : {greedy, top1})  // the host sampler agrees: lowest id of the tie
    for (int64_t pos = 0; pos < 100; ++pos) EXPECT_EQ(sample_token(kLogits, p, 3, pos), 1);
}

// sample_plan takes an executor's argmax for such rows (no logits row) and samples the others from
// their rows; an argmax for a row that needs its logits is an error.
TEST(Sampler, SamplePlanTakesArgmaxRows) {
  SamplingParams greedy, hot;
  hot.temperature = 1.0f;
  const std::vector<int32_t> toks = {0};
  SchedulePlan plan;
  for (RequestId id : {1, 2}) {
    ScheduledSeq s;
    s.request_id = id, s.begin = 0, s.end = 1, s.tokens = toks, s.samples = true;
    s.sampling = id == 1 ? &greedy : &hot;
    plan.seqs.push_back(s);
  }
  const std::vector<std::vector<float>> rows = {{}, kLogits};
  const std::vector<int32_t> argmax = {4, -1};
  StepResult r;
  sample_plan(plan, rows, int64_t(kLogits.size()), r, nullptr, "test", argmax);
  ASSERT_EQ(r.sampled_tokens.size(), 2u);
  EXPECT_EQ(r.sampled_tokens[0], 4);  // taken as given
  EXPECT_EQ(r.sampled_tokens[1], sample_token(kLogits, hot, sampling_seed(hot, 2), 1));
  StepResult bad;
  const std::vector<int32_t> wrong = {4, 1};
  EXPECT_THROW(sample_plan(plan, rows, int64_t(kLogits.size()), bad, nullptr, "test", wrong), Error);
}

TEST(TokenLogprobs, LogSoftmaxAndTopK) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  const TokenLogprobs lp = token_logprobs(logits, 2, 3);
  double z = 0;
  for (float x : logits) z += std::exp(double(x));
  EXPECT_NEAR(lp.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);  // ties: lowest id first
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 2);
  EXPECT_NEAR(lp.top[0].second, 3.0 - std::log(z), 1e-6);
  EXPECT_TRUE(token_logprobs(logits, 0, 0).top.empty());
  EXPECT_THROW(token_logprobs(logits, 4, 1), Error);
}

}  // namespace
}  // namespace ds
