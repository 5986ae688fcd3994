// Golden tests: every case of tests/golden/kimi-linear-tiny/manifest.json against the CPU forward,
// at the manifest's suggested float32 tolerances (logits 1e-4 + 1e-4|x|, states 1e-5 + 1e-4|x|)
// and with identical greedy tokens.
#include <gtest/gtest.h>

#include "golden_fixture.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/norm.h"
#include "runner/logits_job.h"

namespace ds {
namespace {

using namespace ds::testing;

std::vector<float> prefill_all(const std::vector<int32_t>& ids, SequenceState* st = nullptr) {
  const ModelRunner& r = tiny_runner();
  SequenceState local = r.new_sequence();
  ForwardBatch b;
  b.seqs.push_back({ids, st ? st : &local, LogitsWant::All, {}});
  return r.forward(b).logits[0];
}

class PromptLogits : public ::testing::TestWithParam<int> {};

TEST_P(PromptLogits, MatchesGolden) {
  const std::string p = "prompt_" + std::to_string(GetParam());
  const std::vector<int32_t> ids = golden_i32(p + ".input_ids");
  ASSERT_EQ(int(ids.size()), GetParam());
  expect_close(prefill_all(ids), golden_f32(p + ".logits"), kLogitAtol, kLogitRtol, p);
}

INSTANTIATE_TEST_SUITE_P(KimiLinearTiny, PromptLogits, ::testing::Values(1, 5, 63, 64, 65, 130, 300));

TEST(KimiLinearTinyGolden, PerLayerActivations) {
  const ModelRunner& r = tiny_runner();
  const std::vector<int32_t> ids = golden_i32("prompt_65.input_ids");
  SequenceState st = r.new_sequence();
  ForwardBatch b;
  b.capture_layer_outputs = true;
  b.seqs.push_back({ids, &st, LogitsWant::None, {}});
  const ForwardResult out = r.forward(b);
  ASSERT_EQ(out.layer_outputs.size(), 5u);
  EXPECT_TRUE(out.logits[0].empty());
  for (int l = 0; l < 5; ++l) {
    const std::string name = "prompt_65.hidden.layer_" + std::to_string(l);
    expect_close(out.layer_outputs[size_t(l)], golden_f32(name), kLogitAtol, kLogitRtol, name);
  }
}

TEST(KimiLinearTinyGolden, GreedyDecodeWithCache) {
  const LogitsJobResult res = run_logits_job(tiny_runner(), golden_i32("prompt_65.input_ids"), 8);
  EXPECT_EQ(res.decode_tokens, golden_i32("decode.tokens"));
  expect_close(res.logits, golden_f32("prompt_65.logits"), kLogitAtol, kLogitRtol, "decode.prompt");
  expect_close(res.decode_logits, golden_f32("decode.step_logits"), kLogitAtol, kLogitRtol,
               "decode.step_logits");
}

TEST(KimiLinearTinyGolden, SplitPrefill) {
  const ModelRunner& r = tiny_runner();
  const std::vector<int32_t> ids = golden_i32("prompt_130.input_ids");
  SequenceState st = r.new_sequence();
  ForwardBatch head;
  head.seqs.push_back({std::span(ids).first(100), &st, LogitsWant::Last, {}});
  r.forward(head);
  EXPECT_EQ(st.n_tokens, 100);
  ForwardBatch tail;
  tail.seqs.push_back({std::span(ids).subspan(100), &st, LogitsWant::All, {}});
  expect_close(r.forward(tail).logits[0], golden_f32("split.logits_tail"), kLogitAtol, kLogitRtol,
               "split.logits_tail");
  EXPECT_EQ(st.n_tokens, 130);
}

TEST(KimiLinearTinyGolden, StateAfterPrompt65) {
  const ModelRunner& r = tiny_runner();
  SequenceState st = r.new_sequence();
  prefill_all(golden_i32("prompt_65.input_ids"), &st);
  for (int l : {0, 1, 2, 4}) {
    const std::string pre = "state_after_65.kda.layer_" + std::to_string(l);
    expect_close(st.kda[size_t(l)].S, golden_f32(pre + ".S"), kStateAtol, kStateRtol, pre + ".S");
    expect_close(st.kda[size_t(l)].conv, golden_f32(pre + ".conv"), kStateAtol, kStateRtol, pre + ".conv");
  }
  EXPECT_EQ(st.mla[3].n_tokens, 65);
  expect_close(st.mla[3].latent, golden_f32("state_after_65.mla.layer_3.latent"), kStateAtol, kStateRtol,
               "mla.layer_3.latent");
}

// Three sequences of different lengths in ONE forward (the fixture's left-padded rows, unpadded).
TEST(KimiLinearTinyGolden, BatchedDifferentLengths) {
  const std::vector<SequenceState> states =
      check_unpadded_batch(tiny_runner(), golden_i32("batch.input_ids"), golden_i32("batch.attention_mask"),
                           golden_f32("batch.logits"), 3, "batch");
  const int64_t lengths[3] = {65, 63, 5};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(states[size_t(i)].n_tokens, lengths[i]);
}

// The KDA core on the fixture's own layer-0 inputs (fla naive_recurrent_kda in float64).
TEST(KimiLinearTinyGolden, KdaCoreUnit) {
  std::vector<float> q = golden_f32("kda_core.layer_0.q"), k = golden_f32("kda_core.layer_0.k");
  const std::vector<float> v = golden_f32("kda_core.layer_0.v"), g = golden_f32("kda_core.layer_0.g");
  const std::vector<float> beta = golden_f32("kda_core.layer_0.beta");
  const int64_t T = 65, H = 2, K = 128;
  cpu::l2norm_rows(q.data(), T * H, K, 1e-6f);
  cpu::l2norm_rows(k.data(), T * H, K, 1e-6f);
  const KdaDims d{T, H, K, K};
  const float scale = 1.0f / std::sqrt(float(K));
  for (int path = 0; path < 3; ++path) {
    std::vector<float> S(size_t(H * K * K), 0.0f), o(size_t(T * H * K));
    const KdaTensors t{q.data(), k.data(), v.data(), g.data(), beta.data(), S.data(), o.data()};
    const char* name = path == 0 ? "recurrent_ref" : path == 1 ? "recurrent" : "chunked";
    if (path == 0) cpu::kda_recurrent_ref(d, t, scale);
    if (path == 1) kda_recurrent(d, t, scale);
    if (path == 2) kda_chunked(d, t, scale, 64);
    expect_close(o, golden_f32("kda_core.layer_0.o"), kStateAtol, kStateRtol, std::string(name) + ".o");
    expect_close(S, golden_f32("kda_core.layer_0.S_final"), kStateAtol, kStateRtol, std::string(name) + ".S");
  }
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

using namespace ds::testing;

// The KDA layer-0 intermediates on prompt_65 (conv + SiLU outputs, activated gate, beta) equal the
// fixture's kda_core_unit inputs: localises a mismatch to the projections/conv/gates vs the core.
TEST(KimiLinearTinyGolden, KdaLayer0IntermediatesMatchKdaCoreInputs) {
  const ModelRunner& r = tiny_runner();
  const std::vector<int32_t> ids = golden_i32("prompt_65.input_ids");
  auto ck = SafetensorsFile::open(kTinyDir + "/model.safetensors");
  const TensorRef* embed = ck->find("model.embed_tokens.weight");
  const TensorRef* norm = ck->find("model.layers.0.input_layernorm.weight");
  ASSERT_TRUE(embed && norm);
  const int64_t D = r.config().hidden, T = int64_t(ids.size());
  const WeightView ev{embed->data, embed->dtype, embed->shape[0], D};
  const std::vector<float> w = to_f32(WeightView{norm->data, norm->dtype, 1, D});
  std::vector<float> x(size_t(T * D)), y(size_t(T * D));
  for (int64_t t = 0; t < T; ++t) weight_rows_to_f32(ev, ids[size_t(t)], 1, x.data() + t * D);
  cpu::rmsnorm(x.data(), T, D, w.data(), r.config().rms_norm_eps, x.data());
  const KdaLayer* kda = r.kda_layer(0);
  ASSERT_NE(kda, nullptr);
  EXPECT_EQ(r.kda_layer(3), nullptr);
  KdaState st;
  st.init(r.config().kda.n_head, r.config().kda.head_dim, r.config().kda.conv_kernel);
  LayerBatch b;
  b.add(T);
  const KdaSeqIO io[1] = {{st.view(), {}, {}}};
  KdaTrace tr;
  kda->forward(b, io, x.data(), y.data(), &tr);
  expect_close(tr.q, golden_f32("kda_core.layer_0.q"), kStateAtol, kStateRtol, "layer0.q");
  expect_close(tr.k, golden_f32("kda_core.layer_0.k"), kStateAtol, kStateRtol, "layer0.k");
  expect_close(tr.v, golden_f32("kda_core.layer_0.v"), kStateAtol, kStateRtol, "layer0.v");
  expect_close(tr.g, golden_f32("kda_core.layer_0.g"), kStateAtol, kStateRtol, "layer0.g");
  expect_close(tr.beta, golden_f32("kda_core.layer_0.beta"), kStateAtol, kStateRtol, "layer0.beta");
  expect_close(st.S, golden_f32("state_after_65.kda.layer_0.S"), kStateAtol, kStateRtol, "layer0.S");
}

}  // namespace
}  // namespace ds
