// KDA core: chunked prefill == per-token recurrence (random inputs, carried state, several chunk
// sizes, emitted boundary states), optimised recurrence == reference (alone and batched over jobs),
// and argument errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/norm.h"
#include "test_util.h"

namespace ds::cpu {
namespace {

// Inputs shaped like a real KDA layer: q,k L2-normalised per head, g <= 0 with a mix of slow
// and fast decays (including a few very negative values), beta in (0, 1).
struct KdaCase {
  KdaDims d;
  std::vector<float> q, k, v, g, beta, S0;
  KdaCase(int64_t T, int64_t H, int64_t K, int64_t V, uint32_t seed) : d{T, H, K, V} {
    q = test::randn(size_t(T * H * K), seed + 1);
    k = test::randn(size_t(T * H * K), seed + 2);
    v = test::randn(size_t(T * H * V), seed + 3);
    l2norm_rows(q.data(), T * H, K, 1e-6f);
    l2norm_rows(k.data(), T * H, K, 1e-6f);
    g = test::uniform(size_t(T * H * K), seed + 4, -0.3f, -0.001f);
    for (size_t i = 0; i < g.size(); i += 97) g[i] = -12.0f;  // near-total forgetting
    beta = test::uniform(size_t(T * H), seed + 5, 0.05f, 0.95f);
    S0 = test::randn(size_t(H * K * V), seed + 6, 0.5f);
  }
  KdaTensors tensors(float* S, float* o) const {
    return {q.data(), k.data(), v.data(), g.data(), beta.data(), S, o};
  }
};

constexpr double kStateTol = 1e-5;  // fixture tolerance on states

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_LE(test::max_abs_diff(a.data(), b.data(), a.size()), tol) << what;
}

TEST(KdaChunked, MatchesRecurrentWithCarriedStateAndBoundaries) {
  for (int64_t C : {16, 32, 64}) {
    for (int64_t T : {1, 15, 100, 203}) {
      SCOPED_TRACE(testing::Message() << "C=" << C << " T=" << T);
      KdaCase c(T, 3, 32, 48, uint32_t(1000 + T + C));
      const size_t n_state = c.S0.size();
      // Recurrent reference, recording the state after every token.
      std::vector<std::vector<float>> ref_states;
      std::vector<float> S_ref = c.S0, o_ref(size_t(T * 3 * 48));
      for (int64_t s = 0; s < T; ++s) {
        KdaDims one{1, 3, 32, 48};
        KdaTensors tt{c.q.data() + s * 3 * 32,  c.k.data() + s * 3 * 32, c.v.data() + s * 3 * 48,
                      c.g.data() + s * 3 * 32,  c.beta.data() + s * 3,   S_ref.data(),
                      o_ref.data() + s * 3 * 48};
        cpu::kda_recurrent_ref(one, tt, 0.125f);
        ref_states.push_back(S_ref);
      }
      // Chunked, emitting at every chunk boundary and at T.
      std::vector<int64_t> at;
      for (int64_t p = C; p < T; p += C) at.push_back(p);
      at.push_back(T);
      std::vector<std::vector<float>> bufs(at.size(), std::vector<float>(n_state, -1.0f));
      std::vector<float*> ptrs;
      for (auto& b : bufs) ptrs.push_back(b.data());
      std::vector<float> S = c.S0, o(o_ref.size());
      cpu::kda_chunked(c.d, c.tensors(S.data(), o.data()), 0.125f, C, at, ptrs);
      expect_close(S, S_ref, kStateTol, "final state");
      expect_close(o, o_ref, kStateTol, "output");
      for (size_t i = 0; i < at.size(); ++i)
        expect_close(bufs[i], ref_states[size_t(at[i] - 1)], kStateTol, "boundary state");
    }
  }
}

TEST(KdaChunked, RealHeadDimsAndDefaultChunk) {
  KdaCase c(130, 2, 128, 128, 77);
  std::vector<float> S_ref = c.S0, o_ref(size_t(130 * 2 * 128));
  cpu::kda_recurrent_ref(c.d, c.tensors(S_ref.data(), o_ref.data()), 1.0f / std::sqrt(128.0f));
  std::vector<float> S = c.S0, o(o_ref.size());
  cpu::kda_chunked(c.d, c.tensors(S.data(), o.data()), 1.0f / std::sqrt(128.0f));
  expect_close(S, S_ref, kStateTol, "state");
  expect_close(o, o_ref, kStateTol, "output");
}

TEST(KdaChunked, SplitCallsEqualOneCall) {
  // Prefill in two pieces (100 then 30 tokens) carrying S == one call over 130 tokens.
  KdaCase c(130, 2, 64, 64, 5);
  std::vector<float> S1 = c.S0, o1(size_t(130 * 2 * 64));
  cpu::kda_chunked(c.d, c.tensors(S1.data(), o1.data()), 0.125f, 64);
  std::vector<float> S2 = c.S0, o2(o1.size());
  KdaDims a{100, 2, 64, 64}, b{30, 2, 64, 64};
  cpu::kda_chunked(a, c.tensors(S2.data(), o2.data()), 0.125f, 64);
  const int64_t off = 100 * 2 * 64;
  KdaTensors tb{c.q.data() + off,        c.k.data() + off, c.v.data() + off, c.g.data() + off,
                c.beta.data() + 100 * 2, S2.data(),        o2.data() + off};
  cpu::kda_chunked(b, tb, 0.125f, 64);
  expect_close(S2, S1, kStateTol, "state");
  expect_close(o2, o1, kStateTol, "output");
}

TEST(KdaRecurrent, OptimisedMatchesReference) {
  // V = 128: 32-column tiles; 48: one 32- and one 16-column tile; 20: scalar fallback.
  for (auto [T, V] : {std::pair<int64_t, int64_t>{1, 128}, {2, 128}, {17, 128}, {9, 48}, {5, 20}}) {
    SCOPED_TRACE(testing::Message() << "T=" << T << " V=" << V);
    KdaCase c(T, 4, 128, V, uint32_t(300 + T));
    std::vector<float> S_ref = c.S0, o_ref(size_t(T * 4 * V));
    cpu::kda_recurrent_ref(c.d, c.tensors(S_ref.data(), o_ref.data()), 0.0884f);
    std::vector<float> S = c.S0, o(o_ref.size());
    cpu::kda_recurrent(c.d, c.tensors(S.data(), o.data()), 0.0884f);
    expect_close(S, S_ref, kStateTol, "state");
    expect_close(o, o_ref, kStateTol, "output");
  }
}

TEST(KdaRecurrent, BatchMatchesReferencePerJob) {
  // Decode-like jobs (one token) and longer ones, tiled and scalar-fallback value dims, one call.
  const std::vector<std::array<int64_t, 4>> shapes = {{1, 8, 128, 128}, {1, 8, 128, 128}, {3, 2, 64, 48},
                                                      {1, 3, 32, 20},   {0, 2, 16, 16},   {2, 4, 128, 128}};
  std::vector<KdaCase> cases;
  for (size_t i = 0; i < shapes.size(); ++i)
    cases.emplace_back(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], uint32_t(400 + 10 * i));
  std::vector<std::vector<float>> S, o, S_ref, o_ref;
  for (const KdaCase& c : cases) {
    S.push_back(c.S0), S_ref.push_back(c.S0);
    o.emplace_back(size_t(c.d.T * c.d.H * c.d.V)), o_ref.emplace_back(size_t(c.d.T * c.d.H * c.d.V));
  }
  std::vector<KdaRecurrentJob> jobs;
  for (size_t i = 0; i < cases.size(); ++i) {
    jobs.push_back({cases[i].d, cases[i].tensors(S[i].data(), o[i].data())});
    cpu::kda_recurrent_ref(cases[i].d, cases[i].tensors(S_ref[i].data(), o_ref[i].data()), 0.0884f);
  }
  cpu::kda_recurrent_batch(jobs, 0.0884f);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    expect_close(S[i], S_ref[i], kStateTol, "state");
    expect_close(o[i], o_ref[i], kStateTol, "output");
  }
}

TEST(KdaRecurrent, HandComputedSingleToken) {
  // H=1, K=2, V=1, S0 = [[1],[2]], g = log(0.5), k = [1, 0], v = [3], beta = 0.5, q = [0, 1].
  // Decayed S = [[.5],[1]]; e = 3 - .5 = 2.5; S = [[.5 + 1.25],[1]] = [[1.75],[1]]; o = 1 * scale.
  std::vector<float> q{0, 1}, k{1, 0}, v{3}, g{std::log(0.5f), std::log(0.5f)}, beta{0.5f};
  std::vector<float> S{1, 2}, o{0};
  cpu::kda_recurrent_ref({1, 1, 2, 1},
                         {q.data(), k.data(), v.data(), g.data(), beta.data(), S.data(), o.data()}, 2.0f);
  EXPECT_FLOAT_EQ(S[0], 1.75f);
  EXPECT_FLOAT_EQ(S[1], 1.0f);
  EXPECT_FLOAT_EQ(o[0], 2.0f);
}

TEST(KdaChunked, RejectsBadBoundaries) {
  KdaCase c(100, 1, 16, 16, 9);
  std::vector<float> S = c.S0, o(size_t(100 * 16)), buf(S.size());
  float* p = buf.data();
  const int64_t not_multiple[] = {50};
  EXPECT_THROW(cpu::kda_chunked(c.d, c.tensors(S.data(), o.data()), 1.0f, 64, not_multiple, {&p, 1}), Error);
  const int64_t past_end[] = {128};
  EXPECT_THROW(cpu::kda_chunked(c.d, c.tensors(S.data(), o.data()), 1.0f, 64, past_end, {&p, 1}), Error);
  const int64_t ok[] = {64};
  EXPECT_THROW(cpu::kda_chunked(c.d, c.tensors(S.data(), o.data()), 1.0f, 0, ok, {&p, 1}), Error);
  EXPECT_THROW(cpu::kda_chunked(c.d, c.tensors(S.data(), o.data()), 1.0f, 64, ok, {}), Error);
}

}  // namespace
}  // namespace ds::cpu
