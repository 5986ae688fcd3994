// `deltaserve bench forward`: CPU forward throughput of the model runner — prefill tok/s at given
// lengths and decode tok/s at given batch sizes — each next to this machine's floor (weight bytes
// / memory bandwidth vs FLOPs / sgemm peak) and the achieved fraction. Runs on a checkpoint folder
// (default: the tiny golden fixture) and on a synthetic "small" Kimi-Linear config whose random
// bf16 weights are generated in-process and written to a temporary checkpoint folder.
// `--kernels` adds the kernel microbenchmarks (bf16 GEMV GB/s, GEMM GFLOP/s, KDA tok/s).
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_floor.h"
#include "commands.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/hash.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/norm.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "runner/model_runner.h"

namespace ds::cli {

namespace {

struct BenchArgs {
  std::string model = "tests/golden/kimi-linear-tiny";
  bool skip_tiny = false, skip_small = false, kernels = false;
  std::vector<int> prefill = {512, 4096};
  std::vector<int> batches = {1, 16};
  int decode_steps = 16;
  int context = 64;            // prompt tokens of each sequence before the timed decode steps
  double bw_gbs = 45.0;        // streaming read, 2 threads, on the 2-core Zen 5 dev box
  double peak_gflops = 235.0;  // OpenBLAS sgemm 2048³ (OPENBLAS_CORETYPE=Haswell), 2 threads, same box
  bool measure_floor = false;  // measure both on this machine instead
  bool huge_pages = false;     // load the weights into transparent huge pages (RunnerOptions::weights)
  std::string work_dir;        // where the synthetic checkpoint is written (default: temp dir)
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Deterministic, fast uniform random numbers.
struct Rng : SplitMix64 {
  float sym(float a) { return (2.0f * uniform() - 1.0f) * a; }  // U(-a, a)
};

// ---- what the model costs per token, from its tensors -----------------------------------------
struct ModelCost {
  double dense_params = 0, dense_bytes = 0;  // every non-expert tensor except embed and lm_head
  double lm_params = 0, lm_bytes = 0;
  double expert_params = 0, expert_bytes = 0;  // one routed expert of one MoE layer
  int moe_layers = 0, n_expert = 0, top_k = 0;
  int kda_layers = 0, kda_h = 0, kda_k = 0;
  int mla_layers = 0, mla_heads = 0, mla_qk = 0, mla_v = 0, mla_latent = 0;
  double total_bytes = 0;  // all weights except the embedding table
};

ModelCost model_cost(const std::string& dir, const ModelConfig& cfg) {
  ModelCost c;
  const WeightFiles ck = WeightFiles::open(dir, cfg.tensor_prefix());
  double routed_params = 0, routed_bytes = 0;
  for (const std::string& name : ck.names()) {
    const TensorRef* t = ck.find(name);
    const double p = double(t->numel()), b = double(t->n_bytes);
    if (name.find("embed_tokens") != std::string::npos) continue;
    c.total_bytes += b;
    if (name.find("lm_head") != std::string::npos) {
      c.lm_params += p, c.lm_bytes += b;
    } else if (name.find(".experts.") != std::string::npos) {
      routed_params += p, routed_bytes += b;
    } else {
      c.dense_params += p, c.dense_bytes += b;
    }
  }
  for (int l = 0; l < cfg.n_layer; ++l) {
    c.moe_layers += cfg.is_moe_layer(l) ? 1 : 0;
    c.kda_layers += cfg.layer_kind[size_t(l)] == LayerKind::Kda ? 1 : 0;
  }
  c.mla_layers = cfg.n_layer - c.kda_layers;
  c.n_expert = cfg.moe.n_expert, c.top_k = cfg.moe.n_expert_per_token;
  if (c.moe_layers > 0 && c.n_expert > 0) {
    c.expert_params = routed_params / (c.moe_layers * c.n_expert);
    c.expert_bytes = routed_bytes / (c.moe_layers * c.n_expert);
  }
  c.kda_h = cfg.kda.n_head, c.kda_k = cfg.kda.head_dim;
  c.mla_heads = cfg.mla.n_head, c.mla_qk = cfg.mla.qk_head_dim(), c.mla_v = cfg.mla.v_head_dim;
  c.mla_latent = cfg.mla.latent_dim();
  return c;
}

// Expected number of distinct experts hit by n tokens choosing top_k of n_expert uniformly.
double experts_touched(const ModelCost& c, double n_tokens) {
  if (c.n_expert == 0) return 0;
  return c.n_expert * (1.0 - std::pow(1.0 - double(c.top_k) / c.n_expert, n_tokens));
}

// FLOPs of n_tokens through every layer (no lm_head) with `ctx_sum` = Σ attention context.
double forward_flops(const ModelCost& c, double n_tokens, double ctx_sum) {
  const double linear = 2.0 * (c.dense_params + c.moe_layers * c.top_k * c.expert_params);
  const double kda = c.kda_layers * 6.0 * c.kda_h * double(c.kda_k) * c.kda_k;  // recurrence
  const double mla = c.mla_layers * 2.0 * c.mla_heads * double(c.mla_qk + c.mla_v);
  return n_tokens * (linear + kda) + mla * ctx_sum;
}

struct Floor {
  double compute_s, memory_s;
  double seconds() const { return std::max(compute_s, memory_s); }
  const char* bound() const { return compute_s >= memory_s ? "compute" : "memory"; }
};

Floor prefill_floor(const ModelCost& c, const BenchArgs& a, double T) {
  const double flops = forward_flops(c, T, T * (T + 1) / 2) + 2.0 * c.lm_params;
  const double bytes = c.dense_bytes + c.lm_bytes + c.moe_layers * experts_touched(c, T) * c.expert_bytes;
  return {flops / (a.peak_gflops * 1e9), bytes / (a.bw_gbs * 1e9)};
}

Floor decode_floor(const ModelCost& c, const BenchArgs& a, double B, double ctx) {
  const double flops = forward_flops(c, B, B * ctx) + B * 2.0 * c.lm_params;
  const double state = B * (c.kda_layers * 2.0 * 4 * c.kda_h * double(c.kda_k) * c.kda_k +
                            c.mla_layers * 4.0 * ctx * c.mla_latent);
  const double bytes =
      c.dense_bytes + c.lm_bytes + c.moe_layers * experts_touched(c, B) * c.expert_bytes + state;
  return {flops / (a.peak_gflops * 1e9), bytes / (a.bw_gbs * 1e9)};
}

// ---- synthetic "small" checkpoint --------------------------------------------------------------
struct SmallShape {
  int vocab = 32768, hidden = 1024, layers = 12, dense_inter = 4096;
  int kda_heads = 8, kda_dim = 128, conv = 4;
  int mla_heads = 8, kv_lora = 256, qk_nope = 64, qk_rope = 32, v_dim = 64;
  int experts = 32, top_k = 4, moe_inter = 512, shared = 1;
  std::vector<int> mla_layers_1based = {4, 8, 12};
};

nlohmann::json small_config(const SmallShape& s) {
  std::vector<int> kda;
  for (int l = 1; l <= s.layers; ++l)
    if (std::find(s.mla_layers_1based.begin(), s.mla_layers_1based.end(), l) == s.mla_layers_1based.end())
      kda.push_back(l);
  return {{"architectures", {"KimiLinearForCausalLM"}},
          {"model_type", "kimi_linear"},
          {"vocab_size", s.vocab},
          {"hidden_size", s.hidden},
          {"intermediate_size", s.dense_inter},
          {"num_hidden_layers", s.layers},
          {"num_attention_heads", s.mla_heads},
          {"num_key_value_heads", s.mla_heads},
          {"head_dim", s.v_dim},
          {"hidden_act", "silu"},
          {"rms_norm_eps", 1e-5},
          {"tie_word_embeddings", false},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"pad_token_id", 0},
          {"model_max_length", 1048576},
          {"q_lora_rank", nullptr},
          {"kv_lora_rank", s.kv_lora},
          {"qk_nope_head_dim", s.qk_nope},
          {"qk_rope_head_dim", s.qk_rope},
          {"v_head_dim", s.v_dim},
          {"mla_use_nope", true},
          {"num_experts", s.experts},
          {"num_experts_per_token", s.top_k},
          {"num_shared_experts", s.shared},
          {"moe_intermediate_size", s.moe_inter},
          {"first_k_dense_replace", 1},
          {"moe_layer_freq", 1},
          {"moe_router_activation_func", "sigmoid"},
          {"moe_renormalize", true},
          {"routed_scaling_factor", 2.446},
          {"use_grouped_topk", true},
          {"num_expert_group", 1},
          {"topk_group", 1},
          {"num_nextn_predict_layers", 0},
          {"linear_attn_config",
           {{"kda_layers", kda},
            {"full_attn_layers", s.mla_layers_1based},
            {"num_heads", s.kda_heads},
            {"head_dim", s.kda_dim},
            {"short_conv_kernel_size", s.conv}}},
          {"dtype", "bfloat16"}};
}

enum class Init { Linear, Norm, Conv, Embed, ALog, DtBias, Bias };

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  Init init;
};

std::vector<TensorSpec> small_tensors(const SmallShape& s) {
  std::vector<TensorSpec> v;
  const int64_t D = s.hidden, P = int64_t(s.kda_heads) * s.kda_dim;
  auto lin = [&](const std::string& n, int64_t out, int64_t in) {
    v.push_back({n, {out, in}, Init::Linear});
  };
  v.push_back({"model.embed_tokens.weight", {s.vocab, D}, Init::Embed});
  lin("lm_head.weight", s.vocab, D);
  v.push_back({"model.norm.weight", {D}, Init::Norm});
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    v.push_back({p + "input_layernorm.weight", {D}, Init::Norm});
    v.push_back({p + "post_attention_layernorm.weight", {D}, Init::Norm});
    const bool mla =
        std::find(s.mla_layers_1based.begin(), s.mla_layers_1based.end(), l + 1) != s.mla_layers_1based.end();
    const std::string a = p + "self_attn.";
    if (mla) {
      lin(a + "q_proj.weight", int64_t(s.mla_heads) * (s.qk_nope + s.qk_rope), D);
      lin(a + "kv_a_proj_with_mqa.weight", s.kv_lora + s.qk_rope, D);
      v.push_back({a + "kv_a_layernorm.weight", {s.kv_lora}, Init::Norm});
      lin(a + "kv_b_proj.weight", int64_t(s.mla_heads) * (s.qk_nope + s.v_dim), s.kv_lora);
      lin(a + "o_proj.weight", D, int64_t(s.mla_heads) * s.v_dim);
    } else {
      for (const char* n : {"q_proj", "k_proj", "v_proj"}) lin(a + n + ".weight", P, D);
      for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"})
        v.push_back({a + n + ".weight", {P, 1, s.conv}, Init::Conv});
      lin(a + "f_a_proj.weight", s.kda_dim, D);
      lin(a + "f_b_proj.weight", P, s.kda_dim);
      lin(a + "g_a_proj.weight", s.kda_dim, D);
      lin(a + "g_b_proj.weight", P, s.kda_dim);
      lin(a + "b_proj.weight", s.kda_heads, D);
      lin(a + "o_proj.weight", D, P);
      v.push_back({a + "o_norm.weight", {s.kda_dim}, Init::Norm});
      v.push_back({a + "A_log", {1, 1, s.kda_heads, 1}, Init::ALog});
      v.push_back({a + "dt_bias", {P}, Init::DtBias});
    }
    if (l == 0) {
      lin(p + "mlp.gate_proj.weight", s.dense_inter, D);
      lin(p + "mlp.up_proj.weight", s.dense_inter, D);
      lin(p + "mlp.down_proj.weight", D, s.dense_inter);
      continue;
    }
    const std::string m = p + "block_sparse_moe.";
    lin(m + "gate.weight", s.experts, D);
    v.push_back({m + "gate.e_score_correction_bias", {s.experts}, Init::Bias});
    for (int e = 0; e < s.experts; ++e) {
      const std::string x = fmt::format("{}experts.{}.", m, e);
      lin(x + "w1.weight", s.moe_inter, D);
      lin(x + "w2.weight", D, s.moe_inter);
      lin(x + "w3.weight", s.moe_inter, D);
    }
    lin(m + "shared_experts.gate_proj.weight", int64_t(s.shared) * s.moe_inter, D);
    lin(m + "shared_experts.up_proj.weight", int64_t(s.shared) * s.moe_inter, D);
    lin(m + "shared_experts.down_proj.weight", D, int64_t(s.shared) * s.moe_inter);
  }
  return v;
}

// Random values with the fixture's init scales (README: linear N(0,1)/sqrt(fan_in), norms ~1,
// conv taps ~0.5, A_log = log U(1,16), dt ~ log-uniform [1e-3, 1e-1]); uniform stands in for
// normal with the same standard deviation.
float init_value(Init kind, int64_t fan_in, Rng& rng) {
  const float r3 = 1.7320508f;
  switch (kind) {
    case Init::Linear:
      return rng.sym(r3 / std::sqrt(float(fan_in)));
    case Init::Norm:
      return 1.0f + rng.sym(0.1f * r3);
    case Init::Conv:
      return rng.sym(0.5f * r3);
    case Init::Embed:
      return rng.sym(r3);
    case Init::ALog:
      return std::log(1.0f + 15.0f * rng.uniform());
    case Init::DtBias: {
      const float dt = std::exp(std::log(1e-3f) + rng.uniform() * (std::log(1e-1f) - std::log(1e-3f)));
      return std::log(std::expm1(dt));  // softplus^-1
    }
    case Init::Bias:
      return rng.sym(0.1f * r3);
  }
  return 0.0f;
}

// Writes model.safetensors, then config.json, for the small config into dir. The weights are a
// pure function of the shape, so a folder whose config.json already equals this one (written
// last, after complete weights) is reused as is. Returns false when it was reused.
bool write_small_checkpoint(const std::string& dir, const SmallShape& s) {
  const std::string config = small_config(s).dump(2) + "\n";
  {
    std::ifstream old(dir + "/config.json");
    const std::string have((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
    if (have == config && std::filesystem::exists(dir + "/model.safetensors")) return false;
  }
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/config.json");
  const auto specs = small_tensors(s);
  std::vector<std::vector<uint16_t>> bf16(specs.size());
  std::vector<std::vector<float>> f32(specs.size());
  std::vector<TensorToWrite> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& t = specs[i];
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const int64_t fan_in = t.shape.size() == 2 ? t.shape[1] : 1;
    Rng rng{0x5eed0000ull + i};
    const bool is_f32 = t.init == Init::ALog || t.init == Init::DtBias || t.init == Init::Bias;
    if (is_f32) {
      f32[i].resize(size_t(n));
      for (auto& x : f32[i]) x = init_value(t.init, fan_in, rng);
      out.push_back({t.name, DType::F32, t.shape, f32[i].data()});
    } else {
      bf16[i].resize(size_t(n));
      for (auto& x : bf16[i]) x = f32_to_bf16(init_value(t.init, fan_in, rng));
      out.push_back({t.name, DType::BF16, t.shape, bf16[i].data()});
    }
  }
  write_safetensors(dir + "/model.safetensors", out);
  std::ofstream(dir + "/config.json") << config;
  return true;
}

// ---- timing the runner -----------------------------------------------------------------------
std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  Rng rng{seed};
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(rng.next() % uint64_t(vocab));
  return t;
}

void print_row(const std::string& what, double tok_s, const Floor& f, double n_tokens) {
  const double floor_tok_s = n_tokens / f.seconds();
  fmt::print("  {:<26} {:>10.1f} tok/s   floor {:>10.1f} tok/s ({}-bound)   achieved {:>5.1f}%\n", what,
             tok_s, floor_tok_s, f.bound(), 100.0 * tok_s / floor_tok_s);
}

void bench_model(const std::string& label, const std::string& dir, const BenchArgs& a) {
  const double t_load = now_s();
  RunnerOptions opt;
  if (a.huge_pages) opt.weights = WeightMemory::HugePageCopy;
  const auto runner = ModelRunner::load(dir, opt);
  const ModelConfig& cfg = runner->config();
  const ModelCost cost = model_cost(dir, cfg);
  fmt::print(
      "{}: {} (loaded in {:.1f} s): hidden {}, {} layers ({} KDA, {} MLA), {} experts top-{}, "
      "vocab {}, weights {:.1f} MB (excl. embedding)\n",
      label, dir, now_s() - t_load, cfg.hidden, cfg.n_layer, cost.kda_layers, cost.mla_layers, cost.n_expert,
      cost.top_k, cfg.vocab_size, cost.total_bytes / 1e6);
  for (int T : a.prefill) {
    const auto toks = random_tokens(T, cfg.vocab_size, uint64_t(T));
    const int reps = T <= 1024 ? 3 : 1;
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      SequenceState st = runner->new_sequence();
      ForwardBatch b;
      b.seqs.push_back({toks, &st, LogitsWant::Last, {}});
      const double t0 = now_s();
      runner->forward(b);
      best = std::min(best, now_s() - t0);
    }
    print_row(fmt::format("prefill T={}", T), T / best, prefill_floor(cost, a, T), T);
  }
  for (int B : a.batches) {
    std::vector<SequenceState> st;
    for (int i = 0; i < B; ++i) st.push_back(runner->new_sequence());
    ForwardBatch pre;
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < B; ++i) prompts.push_back(random_tokens(a.context, cfg.vocab_size, 1000 + i));
    for (int i = 0; i < B; ++i)
      pre.seqs.push_back({prompts[size_t(i)], &st[size_t(i)], LogitsWant::Last, {}});
    runner->forward(pre);
    std::vector<int32_t> next(size_t(B), 1);
    const double t0 = now_s();
    for (int step = 0; step < a.decode_steps; ++step) {
      ForwardBatch b;
      for (int i = 0; i < B; ++i)
        b.seqs.push_back(
            {std::span<const int32_t>(&next[size_t(i)], 1), &st[size_t(i)], LogitsWant::Last, {}});
      runner->forward(b);
    }
    const double dt = now_s() - t0;
    const double ctx = a.context + a.decode_steps / 2.0;
    print_row(fmt::format("decode batch {}", B), B * a.decode_steps / dt, decode_floor(cost, a, B, ctx), B);
  }
}

// ---- kernel microbenchmarks -------------------------------------------------------------------
void bench_kernels(const BenchArgs& a) {
  fmt::print("kernels:\n");
  Rng rng{7};
  {  // Warm-up (~0.3 s): thread pool start, clock ramp-up; the first timed kernel was 10x slow without.
    std::vector<uint16_t> w(size_t(1) << 22, f32_to_bf16(0.01f));
    std::vector<float> x(1024, 1.0f), y(4096);
    const WeightView wv{w.data(), DType::BF16, 4096, 1024};
    for (const double t0 = now_s(); now_s() - t0 < 0.3;) cpu::linear(x.data(), 1, wv, y.data());
  }
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 1024}, {1024, 4096}, {32768, 1024}}) {
    std::vector<uint16_t> w(size_t(rows * cols));
    for (auto& x : w) x = f32_to_bf16(rng.sym(0.05f));
    const WeightView wv{w.data(), DType::BF16, rows, cols};
    for (int64_t T : {1, 16, 512}) {
      std::vector<float> x(size_t(T * cols)), y(size_t(T * rows));
      for (auto& v : x) v = rng.sym(1.0f);
      cpu::linear(x.data(), T, wv, y.data());  // warm-up
      const int reps = T >= 512 ? 3 : 20;
      const double t0 = now_s();
      for (int r = 0; r < reps; ++r) cpu::linear(x.data(), T, wv, y.data());
      const double dt = (now_s() - t0) / reps;
      const double bytes = double(rows) * cols * 2, flops = 2.0 * rows * cols * T;
      const double floor_s = std::max(bytes / (a.bw_gbs * 1e9), flops / (a.peak_gflops * 1e9));
      fmt::print(
          "  linear bf16 [{}x{}] T={:<4} {:>8.1f} us  {:>6.1f} GB/s  {:>6.1f} GFLOP/s  floor {:>8.1f} us  "
          "achieved {:>5.1f}%\n",
          rows, cols, T, dt * 1e6, bytes / dt / 1e9, flops / dt / 1e9, floor_s * 1e6, 100.0 * floor_s / dt);
    }
  }
  const int64_t H = 8, K = 128;
  for (int64_t T : {1, 64, 512, 4096}) {
    std::vector<float> q(size_t(T * H * K)), k(q.size()), v(q.size()), g(q.size()), beta(size_t(T * H), 0.5f);
    for (size_t i = 0; i < q.size(); ++i)
      q[i] = rng.sym(1.0f), k[i] = rng.sym(1.0f), v[i] = rng.sym(1.0f), g[i] = -0.05f * rng.uniform();
    cpu::l2norm_rows(q.data(), T * H, K, 1e-6f);
    cpu::l2norm_rows(k.data(), T * H, K, 1e-6f);
    std::vector<float> S(size_t(H * K * K)), o(q.size());
    const KdaDims d{T, H, K, K};
    const KdaTensors t{q.data(), k.data(), v.data(), g.data(), beta.data(), S.data(), o.data()};
    const int reps = T >= 512 ? 2 : 50;
    double t0 = now_s();
    for (int r = 0; r < reps; ++r) kda_recurrent(d, t, 0.088f);
    const double rec = (now_s() - t0) / reps;
    t0 = now_s();
    for (int r = 0; r < reps; ++r) kda_chunked(d, t, 0.088f, 64);
    const double chk = (now_s() - t0) / reps;
    fmt::print("  kda H={} K=V={} T={:<5} recurrent {:>9.0f} tok/s   chunked(C=64) {:>9.0f} tok/s\n", H, K, T,
               T / rec, T / chk);
  }
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a;
  f >> a;
  return a.empty() ? "?" : a;
}

void run_bench_forward(BenchArgs a) {
  for (int T : a.prefill) DS_CHECK(T >= 1, "--prefill lengths must be >= 1, got {}", T);
  for (int B : a.batches) DS_CHECK(B >= 1, "--batch sizes must be >= 1, got {}", B);
  DS_CHECK(a.decode_steps >= 1 && a.context >= 1, "--decode-steps and --context must be >= 1");
  if (a.measure_floor) {
    const MeasuredFloor m = measure_floor();
    fmt::print(
        "floor measured: streaming read {:.1f} GB/s; OpenBLAS sgemm 2048^3 {:.1f} GFLOP/s (core {}); "
        "linear() f32 GEMM {:.1f} GFLOP/s\n",
        m.read_gbs, m.sgemm_gflops, m.blas_core, m.linear_gflops);
    a.bw_gbs = m.read_gbs;
    a.peak_gflops = m.sgemm_gflops;
  }
  // How idle OpenMP threads wait decides everything on a shared machine (a spinning thread waits for a
  // descheduled peer at every fork/join): print it with the results.
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin_count = std::getenv("GOMP_SPINCOUNT");
  fmt::print(
      "bench forward: {} OpenMP threads (OMP_WAIT_POLICY={}, GOMP_SPINCOUNT={}), {} kernels, weights {}, "
      "load "
      "average {} at start; floors: {:.0f} GB/s, {:.0f} GFLOP/s\n",
      omp_get_max_threads(), wait_policy ? wait_policy : "unset", spin_count ? spin_count : "unset",
      cpu_isa_name(cpu_isa_active()), a.huge_pages ? "in huge pages" : "mapped", load_average(), a.bw_gbs,
      a.peak_gflops);
  if (a.kernels) bench_kernels(a);
  if (!a.skip_tiny) bench_model("tiny", a.model, a);
  if (!a.skip_small) {
    const std::string dir =
        a.work_dir.empty()
            ? (std::filesystem::temp_directory_path() / fmt::format("ds-bench-small-{}", getpid())).string()
            : a.work_dir;
    const double t0 = now_s();
    if (write_small_checkpoint(dir, SmallShape{}))
      fmt::print("small: synthetic checkpoint written to {} in {:.1f} s\n", dir, now_s() - t0);
    else
      fmt::print("small: synthetic checkpoint reused from {}\n", dir);
    try {
      bench_model("small", dir, a);
    } catch (...) {
      if (a.work_dir.empty()) std::filesystem::remove_all(dir);
      throw;
    }
    if (a.work_dir.empty()) std::filesystem::remove_all(dir);
  }
  fmt::print("load average at end: {}\n", load_average());
}

}  // namespace

void register_bench_forward(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("forward",
                                   "CPU forward benchmark: prefill and decode tok/s vs the machine's floor");
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("--model", a->model, "Model folder for the first model (default: the tiny golden fixture)");
  cmd->add_flag("--skip-tiny", a->skip_tiny, "Do not run the --model checkpoint");
  cmd->add_flag("--skip-small", a->skip_small, "Do not run the synthetic small config");
  cmd->add_flag("--kernels", a->kernels, "Also run kernel microbenchmarks (GEMV/GEMM/KDA)");
  cmd->add_option("--prefill", a->prefill, "Prefill lengths (tokens)")->delimiter(',');
  cmd->add_option("--batch", a->batches, "Decode batch sizes (sequences)")->delimiter(',');
  cmd->add_option("--decode-steps", a->decode_steps, "Timed decode steps per batch size");
  cmd->add_option("--context", a->context, "Prompt tokens per sequence before decoding");
  cmd->add_option("--bandwidth-gbs", a->bw_gbs, "Memory floor: streaming bandwidth in GB/s");
  cmd->add_option("--peak-gflops", a->peak_gflops, "Compute floor: f32 GEMM peak in GFLOP/s");
  cmd->add_flag("--huge-pages", a->huge_pages,
                "Copy the weights into transparent huge pages instead of mapping the files");
  cmd->add_flag("--measure-floor", a->measure_floor,
                "Measure the floor on this machine (streaming read, OpenBLAS sgemm) and use it");
  cmd->add_option("--work-dir", a->work_dir,
                  "Keep the synthetic checkpoint in this folder and reuse it on the next run (default: temp, "
                  "removed)");
  cmd->callback([a] { run_bench_forward(*a); });
}

}  // namespace ds::cli
