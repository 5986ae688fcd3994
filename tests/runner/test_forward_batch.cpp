// ModelRunner::forward with ForwardBatch features beyond the golden cases: KDA checkpoints emitted
// at requested positions equal the state of a prefill of exactly that prefix, resuming from a
// checkpoint reproduces the golden logits, and a bad batch throws without touching any state.
#include <gtest/gtest.h>

#include "core/check.h"
#include "golden_fixture.h"

namespace ds {
namespace {

using namespace ds::testing;

TEST(ForwardBatch, CheckpointsEqualPrefixStatesAndResume) {
  const ModelRunner& r = tiny_runner();
  const std::vector<int32_t> ids = golden_i32("prompt_130.input_ids");
  const std::vector<float> golden = golden_f32("prompt_130.logits");
  const int64_t V = r.config().vocab_size;
  SequenceState st = r.new_sequence();
  ForwardBatch b;
  b.seqs.push_back({ids, &st, LogitsWant::None, {1, 64, 100, 128, 130}});
  const ForwardResult out = r.forward(b);
  ASSERT_EQ(out.checkpoints[0].size(), 5u);
  for (const KdaCheckpoint& cp : out.checkpoints[0]) {
    const std::string at = "@" + std::to_string(cp.n_tokens);
    SequenceState ref = r.new_sequence();
    ForwardBatch pb;
    pb.seqs.push_back({std::span(ids).first(size_t(cp.n_tokens)), &ref, LogitsWant::None, {}});
    r.forward(pb);
    for (int l = 0; l < r.config().n_layer; ++l) {
      if (r.config().layer_kind[size_t(l)] != LayerKind::Kda) continue;
      expect_close(cp.kda[size_t(l)].S, ref.kda[size_t(l)].S, kStateAtol, kStateRtol, "S" + at);
      expect_close(cp.kda[size_t(l)].conv, ref.kda[size_t(l)].conv, kStateAtol, kStateRtol, "conv" + at);
    }
    if (cp.n_tokens == 130) continue;
    // Resume: checkpoint KDA state + the MLA latents of the prefix, then the rest of the prompt.
    SequenceState resume = r.new_sequence();
    resume.n_tokens = cp.n_tokens;
    for (int l = 0; l < r.config().n_layer; ++l) {
      if (r.config().layer_kind[size_t(l)] == LayerKind::Kda) {
        resume.kda[size_t(l)] = cp.kda[size_t(l)];
      } else {
        MlaLatentStore& c = resume.mla[size_t(l)];
        c.n_tokens = cp.n_tokens;
        c.latent.assign(st.mla[size_t(l)].latent.begin(),
                        st.mla[size_t(l)].latent.begin() + cp.n_tokens * c.latent_dim);
      }
    }
    ForwardBatch rb;
    rb.seqs.push_back({std::span(ids).subspan(size_t(cp.n_tokens)), &resume, LogitsWant::All, {}});
    const std::vector<float> tail = r.forward(rb).logits[0];
    expect_close(tail.data(), golden.data() + cp.n_tokens * V, tail.size(), kLogitAtol, kLogitRtol,
                 "resume" + at);
  }
}

TEST(ForwardBatch, BadBatchThrowsAndLeavesStatesUntouched) {
  const ModelRunner& r = tiny_runner();
  SequenceState a = r.new_sequence(), b = r.new_sequence();
  const std::vector<int32_t> good = {1, 2, 3}, bad = {4, 512};
  ForwardBatch fb;
  fb.seqs.push_back({good, &a, LogitsWant::Last, {}});
  fb.seqs.push_back({bad, &b, LogitsWant::Last, {}});
  EXPECT_THROW(r.forward(fb), Error);
  EXPECT_EQ(a.n_tokens, 0);
  EXPECT_EQ(a.mla[3].n_tokens, 0);
  for (float v : a.kda[0].S) ASSERT_EQ(v, 0.0f);

  ForwardBatch shared;  // two entries pointing at one state
  shared.seqs.push_back({good, &a, LogitsWant::Last, {}});
  shared.seqs.push_back({good, &a, LogitsWant::Last, {}});
  EXPECT_THROW(r.forward(shared), Error);
  ForwardBatch badpos;  // checkpoint past the end of the new tokens
  badpos.seqs.push_back({good, &a, LogitsWant::Last, {4}});
  EXPECT_THROW(r.forward(badpos), Error);
  ForwardBatch empty;
  EXPECT_THROW(r.forward(empty), Error);
  EXPECT_EQ(a.n_tokens, 0);
}

TEST(ForwardBatch, MixedPrefillAndDecodeInOneBatch) {
  const ModelRunner& r = tiny_runner();
  const std::vector<int32_t> p65 = golden_i32("prompt_65.input_ids"), p5 = golden_i32("prompt_5.input_ids");
  const std::vector<int32_t> dec = golden_i32("decode.tokens");
  SequenceState a = r.new_sequence(), b = r.new_sequence();
  ForwardBatch first;
  first.seqs.push_back({p65, &a, LogitsWant::Last, {}});
  r.forward(first);
  ForwardBatch mixed;  // a decodes one token while b prefills its whole prompt
  mixed.seqs.push_back({std::span(dec).first(1), &a, LogitsWant::Last, {}});
  mixed.seqs.push_back({p5, &b, LogitsWant::All, {}});
  const ForwardResult out = r.forward(mixed);
  const std::vector<float> step = golden_f32("decode.step_logits");
  expect_close(out.logits[0].data(), step.data(), 512, kLogitAtol, kLogitRtol, "mixed.decode");
  expect_close(out.logits[1], golden_f32("prompt_5.logits"), kLogitAtol, kLogitRtol, "mixed.prefill");
}

}  // namespace
}  // namespace ds
