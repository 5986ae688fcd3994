// Causal attention (MLA prefill form) against the double-precision reference: with and without a
// cached prefix, awkward sizes, strided rows; a hand-computed two-key case.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/attention.h"
#include "test_util.h"

namespace ds::cpu {
namespace {

TEST(Attention, MatchesReference) {
  struct Case {
    int64_t n_q, n_kv, H, Dk, Dv;
  };
  for (Case c : {Case{1, 1, 1, 4, 4}, Case{5, 5, 2, 96, 64}, Case{37, 37, 3, 96, 64}, Case{1, 70, 4, 20, 17},
                 Case{30, 130, 2, 96, 64}}) {
    SCOPED_TRACE(testing::Message() << c.n_q << "/" << c.n_kv << " H" << c.H);
    const AttnDims d{c.n_q, c.n_kv, c.H, c.Dk, c.Dv};
    const int64_t qs = c.H * c.Dk + 3, ks = c.H * c.Dk + 1, vs = c.H * c.Dv + 2, os = c.H * c.Dv + 5;
    const auto q = test::randn(size_t(c.n_q * qs), 1);
    const auto k = test::randn(size_t(c.n_kv * ks), 2);
    const auto v = test::randn(size_t(c.n_kv * vs), 3);
    const float scale = 1.0f / std::sqrt(float(c.Dk));
    std::vector<float> o(size_t(c.n_q * os), 9.0f), o_ref(o.size(), 9.0f);
    attention_causal(d, q.data(), qs, k.data(), ks, v.data(), vs, scale, o.data(), os);
    attention_causal_ref(d, q.data(), qs, k.data(), ks, v.data(), vs, scale, o_ref.data(), os);
    EXPECT_LE(test::max_abs_diff(o.data(), o_ref.data(), o.size()), 2e-6);  // incl. untouched pads
  }
}

TEST(Attention, HandComputedTwoKeys) {
  // One head, Dk = Dv = 1; query 2 sees keys 0,1 with scores 0 and ln 3: weights 1/4, 3/4.
  const AttnDims d{2, 2, 1, 1, 1};
  const std::vector<float> q{5.0f, 1.0f}, k{0.0f, std::log(3.0f)}, v{10.0f, 2.0f};
  std::vector<float> o(2);
  attention_causal(d, q.data(), 1, k.data(), 1, v.data(), 1, 1.0f, o.data(), 1);
  EXPECT_FLOAT_EQ(o[0], 10.0f);  // first query sees only key 0
  EXPECT_NEAR(o[1], 0.25f * 10.0f + 0.75f * 2.0f, 1e-6);
}

TEST(Attention, RejectsBadDims) {
  std::vector<float> x(64);
  EXPECT_THROW(attention_causal({3, 2, 1, 4, 4}, x.data(), 4, x.data(), 4, x.data(), 4, 1.0f, x.data(), 4),
               Error);
  EXPECT_THROW(attention_causal({1, 1, 2, 4, 4}, x.data(), 4, x.data(), 8, x.data(), 8, 1.0f, x.data(), 8),
               Error);
}

}  // namespace
}  // namespace ds::cpu
