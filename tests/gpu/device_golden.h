// Golden checks of the device forward (gpu/device_model.h), shared by the CPU run of the same code
// (tests/gpu/test_device_model.cpp, every CI run) and the CUDA run (tests/gpu/cuda/, label gpu):
// every case of both fixtures' manifests at their float32 tolerances, through paged latents with
// scattered page ids, live slots, checkpoint slots and restores.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "../runner/golden_fixture.h"
#include "gpu/device_model.h"

namespace ds::test {

using ds::testing::expect_close;
using ds::testing::golden_tensor;
using ds::testing::kLogitAtol;
using ds::testing::kLogitRtol;
using ds::testing::kStateAtol;
using ds::testing::kStateRtol;

// The fixtures' folder: $DS_TEST_DATA_DIR when set (prebuilt test binaries run from another
// checkout, e.g. on a GPU machine), else the source tree's tests/.
inline std::string test_data_dir() {
  const char* env = std::getenv("DS_TEST_DATA_DIR");
  return env && *env ? std::string(env) : std::string(DS_TEST_DATA_DIR);
}
inline const std::string kKimiDir = test_data_dir() + "/golden/kimi-linear-tiny";
inline const std::string kK3Dir = test_data_dir() + "/golden/k3-tiny";

// How a test model executes (the weights are the same): the default path (device routing, grouped
// experts, batched heads, few-row GEMV), decode steps as graphs, or the reference path (host
// routing, one cuBLASLt GEMM per projection, per expert and per head).
enum class Path { Default, Graphs, Reference };

struct ModelKey {
  std::string dir;
  Device device;
  Precision precision;
  AttnResMode attn_res;
  Path path;
  bool operator<(const ModelKey& o) const {
    return std::tie(dir, device, precision, attn_res, path) <
           std::tie(o.dir, o.device, o.precision, o.attn_res, o.path);
  }
};

inline const DeviceModel& device_model(const std::string& dir, Device device,
                                       Precision precision = Precision::F32,
                                       AttnResMode attn_res = AttnResMode::Reference,
                                       Path path = Path::Default) {
  static std::map<ModelKey, std::unique_ptr<DeviceModel>> loaded;
  auto& m = loaded[{dir, device, precision, attn_res, path}];
  if (!m) {
    DeviceModelOptions opt;
    opt.device = device, opt.precision = precision, opt.attn_res = attn_res;
    opt.exact_kda = precision == Precision::F32;
    opt.decode_graphs = path == Path::Graphs;
    opt.device_moe = opt.batched_heads = opt.few_row_gemv = path != Path::Reference;
    m = DeviceModel::load(dir, opt);
  }
  return *m;
}

// A model of `dir`'s config (expert intermediate 64) with random weights and MXFP4 routed experts
// (DeviceWeights::random), the same weights for every path.
inline const DeviceModel& mxfp4_model(const std::string& dir, Device device, Precision precision, Path path) {
  static std::map<ModelKey, std::unique_ptr<DeviceModel>> made;
  auto& m = made[{dir, device, precision, AttnResMode::Reference, path}];
  if (!m) {
    ModelConfig cfg = ModelConfig::load(dir);
    cfg.quant.mxfp4_experts = true;
    cfg.moe.expert_intermediate = 64;  // MXFP4 rows are whole 32-input blocks (the fixture's 48 is not)
    DeviceModelOptions opt;
    opt.device = device, opt.precision = precision, opt.exact_kda = precision == Precision::F32;
    opt.device_moe = opt.batched_heads = opt.few_row_gemv = path != Path::Reference;
    m = DeviceModel::random(cfg, opt, 7);
  }
  return *m;
}

inline const SafetensorsFile& golden_file(const std::string& dir) {
  static std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  auto& f = files[dir];
  if (!f) f = SafetensorsFile::open(dir + "/golden.safetensors");
  return *f;
}
inline std::vector<float> gf32(const std::string& dir, const std::string& name) {
  return golden_tensor<float>(golden_file(dir), name, DType::F32);
}
inline std::vector<int32_t> gi32(const std::string& dir, const std::string& name) {
  return golden_tensor<int32_t>(golden_file(dir), name, DType::I32);
}

// Pools plus a trivial allocator: page ids handed out with gaps (3k + 1) so that no sequence's pages
// are adjacent; slots counted up.
class Harness {
 public:
  struct Seq {
    int32_t slot = -1;
    std::vector<int32_t> pages;
    int64_t n = 0;  // tokens in the state
  };
  static constexpr int64_t kPageTokens = 16;

  explicit Harness(const DeviceModel& m) : m_(m), pools_(m.make_pools(m.device(), false, kPageTokens)) {}

  Seq new_seq() {
    Seq s;
    s.slot = new_slot();
    pools_.zero_slot(s.slot);
    return s;
  }
  int32_t new_slot() {
    pools_.reserve_slots(next_slot_);
    return next_slot_++;
  }
  void grow_pages(Seq& s, int64_t tokens) {
    while (int64_t(s.pages.size()) * kPageTokens < tokens) {
      s.pages.push_back(int32_t(3 * next_page_++ + 1));
      pools_.reserve_pages(s.pages.back());
    }
  }
  // One step over several sequences; returns the logits per sequence.
  std::vector<std::vector<float>> step(const std::vector<Seq*>& seqs,
                                       const std::vector<std::span<const int32_t>>& toks, LogitsWant want,
                                       const std::vector<std::vector<DeviceCheckpoint>>& cks = {},
                                       std::vector<std::vector<float>>* layer_outputs = nullptr) {
    DeviceStep st;
    st.capture_layer_outputs = layer_outputs != nullptr;
    for (size_t i = 0; i < seqs.size(); ++i) {
      grow_pages(*seqs[i], seqs[i]->n + int64_t(toks[i].size()));
      DeviceSeqStep q;
      q.tokens = toks[i], q.n_past = seqs[i]->n, q.pages = seqs[i]->pages, q.live_slot = seqs[i]->slot;
      q.logits = want;
      if (i < cks.size()) q.checkpoints = cks[i];
      st.seqs.push_back(q);
    }
    DeviceForwardResult r = m_.forward(st, pools_);
    for (size_t i = 0; i < seqs.size(); ++i) seqs[i]->n += int64_t(toks[i].size());
    if (layer_outputs) *layer_outputs = std::move(r.layer_outputs);
    return std::move(r.logits);
  }
  std::vector<float> run(Seq& s, std::span<const int32_t> toks, LogitsWant want = LogitsWant::All,
                         const std::vector<DeviceCheckpoint>& cks = {}) {
    return step({&s}, {toks}, want, {cks})[0];
  }
  // A new sequence continuing from checkpoint slot `ck` taken at `position` of `from`: the state
  // restored by a slot copy, the full pages shared, the partial page copied.
  Seq restore(const Seq& from, int32_t ck, int64_t position) {
    Seq s = new_seq();
    pools_.copy_slot(s.slot, pools_, ck);
    for (int64_t p = 0; p * kPageTokens < position; ++p) {
      if ((p + 1) * kPageTokens <= position) {
        s.pages.push_back(from.pages[size_t(p)]);
      } else {
        grow_pages(s, (p + 1) * kPageTokens);
        pools_.copy_page(s.pages.back(), pools_, from.pages[size_t(p)]);
      }
    }
    s.n = position;
    return s;
  }
  // Host copies of this sequence's state: KDA layer i's conv and S, MLA layer i's first n latent rows.
  std::vector<float> slot_host(int32_t slot) const {
    std::vector<float> h(size_t(pools_.slot_floats()));
    copy_bytes(h.data(), Device::Cpu, pools_.slot(slot), pools_.device(), pools_.slot_floats() * 4);
    return h;
  }
  std::vector<float> latents_host(const Seq& s, int mla_layer, int64_t n) const {
    const int64_t L = pools_.latent_dim();
    std::vector<float> h(size_t(n * L));
    for (int64_t t = 0; t < n; t += kPageTokens) {
      const int64_t rows = std::min(kPageTokens, n - t);
      copy_bytes(h.data() + t * L, Device::Cpu,
                 pools_.latents(mla_layer) + int64_t(s.pages[size_t(t / kPageTokens)]) * kPageTokens * L,
                 pools_.device(), rows * L * 4);
    }
    return h;
  }
  DevicePools& pools() { return pools_; }

 private:
  const DeviceModel& m_;
  DevicePools pools_;
  int32_t next_slot_ = 0;
  int32_t next_page_ = 0;
};

inline std::vector<float> rows_of(const std::vector<float>& logits, int64_t V, int64_t r0, int64_t r1) {
  return {logits.begin() + r0 * V, logits.begin() + r1 * V};
}

inline int32_t argmax_row(const float* row, int64_t V) {
  return int32_t(std::max_element(row, row + V) - row);
}

// ---- the checks -------------------------------------------------------------------------------------

inline void check_prompts(const DeviceModel& m, const std::string& dir, const std::string& tag) {
  for (int n : {1, 5, 63, 64, 65, 130, 300}) {
    const std::string p = "prompt_" + std::to_string(n);
    Harness h(m);
    Harness::Seq s = h.new_seq();
    const std::vector<int32_t> ids = gi32(dir, p + ".input_ids");
    expect_close(h.run(s, ids), gf32(dir, p + ".logits"), kLogitAtol, kLogitRtol, tag + "." + p);
  }
}

inline void check_greedy_decode(const DeviceModel& m, const std::string& dir, const std::string& tag) {
  const int64_t V = m.config().vocab_size;
  Harness h(m);
  Harness::Seq s = h.new_seq();
  const std::vector<float> prompt = h.run(s, gi32(dir, "prompt_65.input_ids"));
  expect_close(prompt, gf32(dir, "prompt_65.logits"), kLogitAtol, kLogitRtol, tag + ".decode.prompt");
  std::vector<int32_t> tokens{argmax_row(prompt.data() + 64 * V, V)};
  std::vector<float> steps;
  for (int j = 0; j < 8; ++j) {
    const std::vector<float> l = h.run(s, std::span(tokens).subspan(size_t(j), 1), LogitsWant::Last);
    steps.insert(steps.end(), l.begin(), l.end());
    if (j < 7) tokens.push_back(argmax_row(l.data(), V));
  }
  EXPECT_EQ(tokens, gi32(dir, "decode.tokens")) << tag;
  expect_close(steps, gf32(dir, "decode.step_logits"), kLogitAtol, kLogitRtol, tag + ".decode.step_logits");
}

inline void check_split_and_state(const DeviceModel& m, const std::string& dir, const std::string& tag) {
  const ModelConfig& cfg = m.config();
  {
    Harness h(m);
    Harness::Seq s = h.new_seq();
    const std::vector<int32_t> ids = gi32(dir, "prompt_130.input_ids");
    h.run(s, std::span(ids).first(100), LogitsWant::Last);
    expect_close(h.run(s, std::span(ids).subspan(100)), gf32(dir, "split.logits_tail"), kLogitAtol,
                 kLogitRtol, tag + ".split.logits_tail");
  }
  Harness h(m);
  Harness::Seq s = h.new_seq();
  h.run(s, gi32(dir, "prompt_65.input_ids"), LogitsWant::None);
  const std::vector<float> slot = h.slot_host(s.slot);
  const int64_t per = h.pools().layer_state_floats(), conv = int64_t(h.pools().kda_shape().conv_floats());
  int kda = 0, mla = 0;
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string pre = "state_after_65." +
                            std::string(cfg.layer_kind[size_t(l)] == LayerKind::Kda ? "kda" : "mla") +
                            ".layer_" + std::to_string(l);
    if (cfg.layer_kind[size_t(l)] == LayerKind::Kda) {
      const float* base = slot.data() + kda++ * per;
      expect_close(std::vector<float>(base, base + conv), gf32(dir, pre + ".conv"), kStateAtol, kStateRtol,
                   tag + "." + pre + ".conv");
      expect_close(std::vector<float>(base + conv, base + per), gf32(dir, pre + ".S"), kStateAtol, kStateRtol,
                   tag + "." + pre + ".S");
    } else {
      // K3's second MLA layer projects the layer-3 partial block sum, which matches at the activation
      // tolerance (as tests/runner/test_k3_golden.cpp explains): held to that tolerance.
      const bool deep = cfg.attn_res_block_size > 0 && mla > 0;
      expect_close(h.latents_host(s, mla++, 65), gf32(dir, pre + ".latent"), deep ? kLogitAtol : kStateAtol,
                   deep ? kLogitRtol : kStateRtol, tag + "." + pre + ".latent");
    }
  }
}

// The fixture's left-padded batch, run unpadded as three sequences of different lengths in one step.
inline void check_batch(const DeviceModel& m, const std::string& dir, const std::string& tag) {
  const int64_t V = m.config().vocab_size;
  const std::vector<int32_t> ids = gi32(dir, "batch.input_ids"), mask = gi32(dir, "batch.attention_mask");
  const std::vector<float> want = gf32(dir, "batch.logits");
  const int64_t rows = 3, S = int64_t(ids.size()) / rows;
  std::vector<std::vector<int32_t>> toks(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < S; ++t)
      if (mask[size_t(i * S + t)]) toks[size_t(i)].push_back(ids[size_t(i * S + t)]);
  Harness h(m);
  std::vector<Harness::Seq> seqs{h.new_seq(), h.new_seq(), h.new_seq()};
  const std::vector<std::vector<float>> out =
      h.step({&seqs[0], &seqs[1], &seqs[2]}, {toks[0], toks[1], toks[2]}, LogitsWant::All);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t n = int64_t(toks[size_t(i)].size()), pad = S - n;
    expect_close(out[size_t(i)].data(), want.data() + (i * S + pad) * V, size_t(n * V), kLogitAtol,
                 kLogitRtol, tag + ".batch.row" + std::to_string(i));
  }
}

// Greedy decode of three sequences of different lengths in one batch, 6 steps, on `m` and on `ref`
// (another execution path of the same weights): the same tokens, logits within 1e-5. With decode
// graphs on `m`, the first step records and the next five replay with new tokens and positions.
inline void check_decode_paths(const DeviceModel& m, const DeviceModel& ref, const std::string& dir,
                               const std::string& tag) {
  const int64_t V = m.config().vocab_size;
  Harness hm(m), hr(ref);
  std::vector<Harness::Seq> sm{hm.new_seq(), hm.new_seq(), hm.new_seq()};
  std::vector<Harness::Seq> sr{hr.new_seq(), hr.new_seq(), hr.new_seq()};
  std::vector<std::vector<int32_t>> prompts;
  for (const char* p : {"prompt_5", "prompt_63", "prompt_65"})
    prompts.push_back(gi32(dir, std::string(p) + ".input_ids"));
  std::vector<std::vector<float>> lm, lr;
  for (size_t i = 0; i < 3; ++i) {
    lm.push_back(hm.run(sm[i], prompts[i], LogitsWant::Last));
    lr.push_back(hr.run(sr[i], prompts[i], LogitsWant::Last));
  }
  for (int step = 0; step < 6; ++step) {
    std::vector<std::vector<int32_t>> next(3);
    for (size_t i = 0; i < 3; ++i) {
      expect_close(lm[i], lr[i], 1e-5, 1e-5, tag + ".paths.step" + std::to_string(step));
      next[i] = {argmax_row(lm[i].data(), V)};
      EXPECT_EQ(next[i][0], argmax_row(lr[i].data(), V)) << tag << " step " << step << " seq " << i;
    }
    lm = hm.step({&sm[0], &sm[1], &sm[2]}, {next[0], next[1], next[2]}, LogitsWant::Last);
    lr = hr.step({&sr[0], &sr[1], &sr[2]}, {next[0], next[1], next[2]}, LogitsWant::Last);
  }
}

// Checkpoints written by the forward at aligned and unaligned positions, restored into new live
// slots with shared pages: the continuation equals the one-shot prompt_130 logits.
inline void check_checkpoint_restore(const DeviceModel& m, const std::string& dir, const std::string& tag) {
  const int64_t V = m.config().vocab_size;
  const std::vector<int32_t> ids = gi32(dir, "prompt_130.input_ids");
  const std::vector<float> want = gf32(dir, "prompt_130.logits");
  Harness h(m);
  Harness::Seq s = h.new_seq();
  const std::vector<int64_t> at{37, 64, 100};
  std::vector<DeviceCheckpoint> cks;
  for (int64_t p : at) cks.push_back({p, h.new_slot()});
  h.run(s, std::span(ids).first(110), LogitsWant::None, cks);
  for (size_t i = 0; i < at.size(); ++i) {
    Harness::Seq r = h.restore(s, cks[i].slot, at[i]);
    const std::vector<float> got = h.run(r, std::span(ids).subspan(size_t(at[i])));
    expect_close(got, rows_of(want, V, at[i], 130), kLogitAtol, kLogitRtol,
                 tag + ".restore_at_" + std::to_string(at[i]));
  }
  // A checkpoint written by a one-token (decode) step.
  Harness::Seq d = h.new_seq();
  h.run(d, std::span(ids).first(64), LogitsWant::None);
  const int32_t ck = h.new_slot();
  h.run(d, std::span(ids).subspan(64, 1), LogitsWant::Last, {{65, ck}});
  Harness::Seq r = h.restore(d, ck, 65);
  expect_close(h.run(r, std::span(ids).subspan(65)), rows_of(want, V, 65, 130), kLogitAtol, kLogitRtol,
               tag + ".restore_after_decode");
}

// K3: the partial block sums after every layer (what K3 passes between layers).
inline void check_partial_block_sums(const DeviceModel& m, const std::string& dir, const std::string& tag) {
  Harness h(m);
  Harness::Seq s = h.new_seq();
  std::vector<std::vector<float>> outs;
  const std::vector<int32_t> ids = gi32(dir, "prompt_65.input_ids");
  h.step({&s}, {ids}, LogitsWant::None, {}, &outs);
  ASSERT_EQ(int(outs.size()), m.config().n_layer);
  for (int l = 0; l < m.config().n_layer; ++l) {
    const std::string name = "prompt_65.partial_block_sum.layer_" + std::to_string(l);
    expect_close(outs[size_t(l)], gf32(dir, name), kLogitAtol, kLogitRtol, tag + "." + name);
  }
}

// bf16 weights: teacher-forced decode against the f32 golden. Reports the largest logit difference
// and the greedy agreement; asserts top-1 agreement where the golden's top-2 margin exceeds
// `margin` (bf16 rounding of the GEMM inputs moves logits by a few 1e-2 at most on these models).
inline void check_bf16_decode(const DeviceModel& m, const std::string& dir, const std::string& tag,
                              float margin) {
  const int64_t V = m.config().vocab_size;
  const std::vector<int32_t> golden_tokens = gi32(dir, "decode.tokens");
  const std::vector<float> want = gf32(dir, "decode.step_logits"),
                           want_prompt = gf32(dir, "prompt_65.logits");
  Harness h(m);
  Harness::Seq s = h.new_seq();
  const std::vector<float> prompt = h.run(s, gi32(dir, "prompt_65.input_ids"));
  double worst = 0;
  int agree = 0, prompt_agree = 0;
  for (size_t i = 0; i < prompt.size(); ++i)
    worst = std::max(worst, double(std::fabs(prompt[i] - want_prompt[i])));
  for (int64_t t = 0; t < 65; ++t)
    prompt_agree += argmax_row(prompt.data() + t * V, V) == argmax_row(want_prompt.data() + t * V, V);
  std::vector<int32_t> free_run{argmax_row(prompt.data() + 64 * V, V)};
  for (size_t j = 0; j < golden_tokens.size(); ++j) {
    const std::vector<float> l = h.run(s, std::span(golden_tokens).subspan(j, 1), LogitsWant::Last);
    const float* g = want.data() + j * size_t(V);
    for (int64_t v = 0; v < V; ++v) worst = std::max(worst, double(std::fabs(l[size_t(v)] - g[v])));
    std::vector<float> sorted(g, g + V);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    const int32_t mine = argmax_row(l.data(), V), gold = argmax_row(g, V);
    agree += mine == gold;
    if (sorted[0] - sorted[1] > margin) {
      EXPECT_EQ(mine, gold) << tag << " step " << j << " margin " << sorted[0] - sorted[1];
    }
    if (j + 1 < golden_tokens.size()) free_run.push_back(mine);
  }
  std::printf(
      "    %s bf16: max |logit diff| %.4g (prompt_65 + teacher-forced decode), top-1 agreement prompt %d/65, "
      "decode %d/%zu, first token %s\n",
      tag.c_str(), worst, prompt_agree, agree, golden_tokens.size(),
      free_run[0] == golden_tokens[0] ? "equal" : "differs");
  EXPECT_EQ(free_run[0], golden_tokens[0]) << tag;
}

}  // namespace ds::test
