// Causal attention (MLA prefill form) against the double-precision reference: with and without a
// cached prefix, awkward sizes, strided rows; a hand-computed two-key case. Absorbed MLA decode
// attention (latent_attention) against its double reference: paged and contiguous latent rows,
// several queries per sequence, awkward and model-sized shapes; the expanded form agrees with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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

// Latent rows of one sequence stored in shuffled pages of a pool (pages: reverse order), or
// contiguously from row kContiguousOffsetRows.
constexpr int64_t kContiguousOffsetRows = 5;
struct PagedLatents {
  std::vector<float> pool;
  std::vector<int32_t> pages;
  PagedLatents(int64_t n_rows, int64_t page_rows, int64_t row_stride, uint32_t seed) {
    const int64_t n_pages = (n_rows + page_rows - 1) / page_rows;
    const int64_t rows = std::max((n_pages + 1) * page_rows, kContiguousOffsetRows + n_rows);
    pool = test::randn(size_t(rows * row_stride), seed);
    for (int64_t p = n_pages; p >= 1; --p) pages.push_back(int32_t(p));  // page 0 unused
  }
};

TEST(LatentAttention, MatchesReference) {
  struct Case {
    LatentAttnShape s;
    std::vector<std::array<int64_t, 3>> seqs;  // n_q, n_kv, page_rows (0: contiguous)
  };
  const Case cases[] = {
      {{3, 5, 3, 7, 20}, {{1, 1, 0}, {1, 37, 8}, {3, 20, 0}, {2, 9, 4}}},
      {{8, 64, 32, 64, 256}, {{1, 70, 16}, {1, 65, 64}, {1, 3, 0}, {4, 81, 0}}},  // parallel
  };
  for (const Case& c : cases) {
    const LatentAttnShape& s = c.s;
    const int64_t L = s.R + s.dr + 3;  // row stride with padding
    const auto w = test::randn(size_t(s.H * (s.dn + s.dv) * s.R), 5, 0.1f);
    std::vector<PagedLatents> lat;
    std::vector<std::vector<float>> q, o, o_ref;
    std::vector<LatentAttnSeq> seqs, seqs_ref;
    for (size_t i = 0; i < c.seqs.size(); ++i) {
      const auto [n_q, n_kv, page_rows] = c.seqs[i];
      lat.emplace_back(n_kv, page_rows ? page_rows : n_kv, L, uint32_t(10 + i));
      q.push_back(test::randn(size_t(n_q * s.H * (s.dn + s.dr) + 1), uint32_t(20 + i)));
      o.emplace_back(size_t(n_q * s.H * s.dv), 0.0f);
      o_ref.emplace_back(size_t(n_q * s.H * s.dv), 0.0f);
    }
    for (size_t i = 0; i < c.seqs.size(); ++i) {
      const auto [n_q, n_kv, page_rows] = c.seqs[i];
      const LatentRows rows = page_rows
                                  ? LatentRows{lat[i].pool.data(), lat[i].pages, page_rows, L}
                                  : LatentRows{lat[i].pool.data() + kContiguousOffsetRows * L, {}, 1, L};
      seqs.push_back({q[i].data() + 1, s.H * (s.dn + s.dr), o[i].data(), s.H * s.dv, n_q, n_kv, rows});
      seqs_ref.push_back(
          {q[i].data() + 1, s.H * (s.dn + s.dr), o_ref[i].data(), s.H * s.dv, n_q, n_kv, rows});
    }
    const float scale = 1.0f / std::sqrt(float(s.dn + s.dr));
    cpu::latent_attention(s, seqs, w.data(), scale);
    cpu::latent_attention_ref(s, seqs_ref, w.data(), scale);
    for (size_t i = 0; i < c.seqs.size(); ++i)
      EXPECT_LE(test::max_scaled_err(o[i].data(), o_ref[i].data(), o[i].size(), 1e-5, 1e-4), 1.0)
          << "seq " << i;
  }
}

TEST(LatentAttention, RejectsBadSizes) {
  std::vector<float> buf(64), w(64);
  const LatentAttnShape s{1, 2, 1, 2, 4};
  const LatentAttnSeq ok{buf.data(), 3, buf.data(), 2, 1, 2, LatentRows{buf.data(), {}, 1, 5}};
  EXPECT_NO_THROW(cpu::latent_attention(s, {&ok, 1}, w.data(), 1.0f));
  LatentAttnSeq bad = ok;
  bad.n_kv = 0;
  EXPECT_THROW(cpu::latent_attention(s, {&bad, 1}, w.data(), 1.0f), Error);
  bad = ok;
  bad.kv.row_stride = 4;  // below R + dr
  EXPECT_THROW(cpu::latent_attention(s, {&bad, 1}, w.data(), 1.0f), Error);
  const std::vector<int32_t> one_page{0};
  bad = ok;
  bad.kv = LatentRows{buf.data(), one_page, 1, 5};  // one 1-row page for 2 rows
  EXPECT_THROW(cpu::latent_attention(s, {&bad, 1}, w.data(), 1.0f), Error);
}

}  // namespace
}  // namespace ds::cpu
