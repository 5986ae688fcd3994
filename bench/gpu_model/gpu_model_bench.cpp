#include "gpu_model_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "gpu/device_model.h"
#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/memory.h"
#include "mla_flash_bench.h"
#include "model/model_config.h"
#include "moe_gemm_bench.h"

namespace ds::bench {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double gb(double bytes) {
  return bytes / 1e9;
}

// Device-to-device copy bandwidth (bytes read + written per second), best of 5 over 2 GiB.
double measure_copy_bandwidth() {
  const int64_t bytes = int64_t(2) << 30;
  Buffer a(Device::Cuda, bytes), b(Device::Cuda, bytes);
  fill_uniform(TensorView::contiguous(a.data(), DType::F32, {bytes / 4}, Device::Cuda), 7, 1.0f);
  double best = 1e30;
  for (int i = 0; i < 6; ++i) {
    synchronize(Device::Cuda);
    const double t0 = now_s();
    copy_bytes(b.data(), Device::Cuda, a.data(), Device::Cuda, bytes);
    synchronize(Device::Cuda);
    if (i > 0) best = std::min(best, now_s() - t0);
  }
  return 2.0 * double(bytes) / best;
}

// bf16 linear [n, n] over n rows: FLOP/s, best of 5.
double measure_gemm_rate(int64_t n) {
  Buffer w(Device::Cuda, n * n * 2), x(Device::Cuda, n * n * 2), y(Device::Cuda, n * n * 4);
  fill_uniform(TensorView::contiguous(w.data(), DType::BF16, {n * n}, Device::Cuda), 8, 0.1f);
  fill_uniform(TensorView::contiguous(x.data(), DType::BF16, {n * n}, Device::Cuda), 9, 1.0f);
  const WeightView wv{w.data(), DType::BF16, n, n, Device::Cuda};
  const TensorView xv = TensorView::matrix(x.data(), DType::BF16, n, n, -1, Device::Cuda);
  const TensorView yv = TensorView::matrix(y.data(), DType::F32, n, n, -1, Device::Cuda);
  double best = 1e30;
  for (int i = 0; i < 6; ++i) {
    synchronize(Device::Cuda);
    const double t0 = now_s();
    linear(xv, wv, yv);
    synchronize(Device::Cuda);
    if (i > 0) best = std::min(best, now_s() - t0);
  }
  return 2.0 * double(n) * double(n) * double(n) / best;
}

// What one decode step must read, from the model's shapes.
struct StepBytes {
  double shared = 0;  // every non-routed GEMM weight except the embedding table (lm_head included)
  double expert = 0;  // one routed expert of one layer
  int moe_layers = 0;
  double active_params_per_token = 0;  // for the prefill FLOPs: shared + k experts per MoE layer
  double lm_head_params = 0;           // in the active parameters; a prefill computes it for its last token
};

StepBytes step_bytes(const DeviceModel& m) {
  const ModelConfig& c = m.config();
  StepBytes s;
  for (int l = 0; l < c.n_layer; ++l) s.moe_layers += c.is_moe_layer(l) ? 1 : 0;
  const double elt = m.options().precision == Precision::BF16 ? 2.0 : 4.0;
  double routed = 0, total = 0;
  for (const auto& [part, bytes] : m.weights().bytes_by_part()) {
    total += double(bytes);
    if (part == "routed experts") routed += double(bytes);
  }
  const double embed = double(c.vocab_size) * c.hidden * elt;
  s.shared = total - routed - embed;
  s.expert = s.moe_layers > 0 ? routed / (double(s.moe_layers) * c.moe.n_expert) : 0.0;
  // MXFP4 routed experts: 4 + 8 / 32 bits per parameter (codes and scales).
  const double expert_elt = c.quant.mxfp4_experts ? c.quant.routed_expert_bits() / 8.0 : elt;
  s.active_params_per_token =
      s.shared / elt + s.expert * s.moe_layers * c.moe.n_expert_per_token / expert_elt;
  s.lm_head_params = c.tie_word_embeddings ? 0.0 : double(c.vocab_size) * c.hidden;
  return s;
}

// Expected distinct experts among B tokens choosing k of E each (uniform routing).
double distinct_experts(int E, int k, int B) {
  return double(E) * (1.0 - std::pow(1.0 - double(k) / E, B));
}

// graphs-grouped: graphs with the grouped expert GLU at every batch (no token-major MoE);
// graphs-rows8: graphs with the GEMV and the token-major MoE up to 8 rows; graphs-f32mla: graphs with
// the absorbed MLA attention in f32 on the CUDA cores (no tensor-core decode attention); graphs-ltheads:
// graphs with MLA's per-head products as a cast and a cuBLASLt product (no linear_few_rows_heads).
DeviceModelOptions variant_options(const DeviceModelOptions& base, const std::string& v) {
  DeviceModelOptions o = base;
  DS_CHECK(v == "host" || v == "device" || v == "graphs" || v == "graphs-cublas" || v == "graphs-grouped" ||
               v == "graphs-rows8" || v == "graphs-f32mla" || v == "absorbed" || v == "per-expert" ||
               v == "dense-mla" || v == "mma-moe" || v == "graphs-ltheads",
           "unknown variant '{}' (host, device, graphs, graphs-cublas, graphs-grouped, graphs-rows8, "
           "graphs-f32mla, graphs-ltheads, absorbed, per-expert, dense-mla, mma-moe)",
           v);
  o.device_moe = o.batched_heads = v != "host";
  o.dense_mla = v != "absorbed" && v != "host";
  o.few_row_gemv = v != "host" && v != "graphs-cublas";
  o.decode_graphs = v.rfind("graphs", 0) == 0;
  o.grouped_gemm = v != "per-expert";
  o.flash_mla = v != "dense-mla";
  o.wgmma_moe = v != "mma-moe";
  if (v == "graphs-grouped" || v == "host") o.token_moe_max_tokens = 0;
  o.mma_mla = v != "graphs-f32mla" && v != "host";
  o.heads_gemv = v != "graphs-ltheads";
  if (v == "graphs-rows8") o.gemv_max_rows = o.token_moe_max_tokens = 8;
  return o;
}

// "<variant>~<items>": the variant with items (joined by '+') in effect while its graph is recorded:
// NAME=value sets env NAME (a kernel form knob: DS_TOKEN_DOWN, DS_GEMV_ASYNC, ...); any other item is a
// kernel-name substring for env DS_ABLATE (kernels/cuda/pdl.cuh: those launches become no-ops that keep
// the PDL chain, '-' first: skipped). The variables are unset again when the variant is done.
class VariantEnv {
 public:
  explicit VariantEnv(const std::string& items) {
    std::string ablate;
    for (size_t p = 0; p < items.size();) {
      const size_t e = std::min(items.find('+', p), items.size());
      const std::string item = items.substr(p, e - p);
      const size_t eq = item.find('=');
      if (eq != std::string::npos) {
        names_.push_back(item.substr(0, eq));
        setenv(names_.back().c_str(), item.substr(eq + 1).c_str(), 1);
      } else if (!item.empty()) {
        ablate += (ablate.empty() ? "" : ",") + item;
      }
      p = e + 1;
    }
    if (!ablate.empty()) {
      names_.push_back("DS_ABLATE");
      setenv("DS_ABLATE", ablate.c_str(), 1);
    }
  }
  ~VariantEnv() {
    for (const std::string& n : names_) unsetenv(n.c_str());
  }
  VariantEnv(const VariantEnv&) = delete;
  VariantEnv& operator=(const VariantEnv&) = delete;

 private:
  std::vector<std::string> names_;
};

// Pools with `batch` sequences of `context` random past tokens (latents and KDA states random).
DevicePools make_filled_pools(const DeviceModel& m, int batch, int64_t tokens, int page_tokens,
                              int64_t* pages_per_seq) {
  DevicePools p = m.make_pools(Device::Cuda, false, page_tokens);
  *pages_per_seq = (tokens + page_tokens - 1) / page_tokens;
  p.reserve_pages(int64_t(batch) * *pages_per_seq - 1);
  p.reserve_slots(batch - 1);
  for (int l = 0; l < m.config().n_mla_layers(); ++l)
    fill_uniform(
        TensorView::contiguous(p.latents(l), DType::F32, {p.n_pages() * p.page_floats()}, Device::Cuda),
        100 + uint64_t(l), 1.0f);
  fill_uniform(
      TensorView::contiguous(p.slots_base(), DType::F32, {p.n_slots() * p.slot_floats()}, Device::Cuda), 99,
      0.01f);
  return p;
}

struct DecodeBatch {
  std::vector<std::vector<int32_t>> tokens, pages;
  DeviceStep step;
};

DecodeBatch decode_batch(int batch, int64_t n_past, int64_t pages_per_seq, int vocab) {
  DecodeBatch d;
  d.tokens.resize(size_t(batch));
  d.pages.resize(size_t(batch));
  for (int b = 0; b < batch; ++b) {
    d.tokens[size_t(b)] = {int32_t((b * 7919 + 17) % vocab)};
    for (int64_t p = 0; p < pages_per_seq; ++p) d.pages[size_t(b)].push_back(int32_t(b * pages_per_seq + p));
    DeviceSeqStep s;
    s.tokens = d.tokens[size_t(b)];
    s.n_past = n_past;
    s.pages = d.pages[size_t(b)];
    s.live_slot = b;
    s.argmax_only = true;
    d.step.seqs.push_back(s);
  }
  return d;
}

void run_decode(DeviceModel& m, const GpuBenchArgs& a, const DeviceModelOptions& base, double bw) {
  const ModelConfig& c = m.config();
  const StepBytes sb = step_bytes(m);
  const double kv_per_token = double(c.n_mla_layers()) * c.mla.latent_dim() * 4.0;  // f32 latents
  const KdaStateShape ks = m.kda_state_shape();
  const double state_per_seq = 2.0 * double(c.n_kda_layers()) * double(ks.floats()) * 4.0;  // read + write
  fmt::print("decode (greedy, argmax on the device; {} timed steps after 2 warm-up steps):\n",
             a.decode_steps);
  fmt::print("  {:>6} {:>5} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9} {:>8}\n", "ctx", "batch", "variant",
             "ms/step", "tok/s", "floor GB", "floor ms", "floor%", "wts%");
  for (int ctx : a.contexts)
    for (int batch : a.batches) {
      const int warm = 2;
      const int64_t tokens = int64_t(ctx) + warm + a.decode_steps;
      int64_t pps = 0;
      DevicePools pools = [&] {
        try {
          return make_filled_pools(m, batch, tokens, a.page_tokens, &pps);
        } catch (const Error& e) {
          fmt::print("  {:>6} {:>5} skipped: {}\n", ctx, batch, e.what());
          return m.make_pools(Device::Cuda, false, a.page_tokens);
        }
      }();
      if (pps == 0 || pools.n_slots() < batch) continue;
      const double experts = distinct_experts(c.moe.n_expert, c.moe.n_expert_per_token, batch);
      const double weights = sb.shared + sb.expert * sb.moe_layers * experts;
      const double bytes = weights + batch * (kv_per_token * double(ctx) + state_per_seq);
      for (const std::string& v : a.variants) {
        const size_t tilde = v.find('~');
        const VariantEnv env(tilde == std::string::npos ? std::string() : v.substr(tilde + 1));
        m.set_execution(variant_options(base, v.substr(0, tilde)));
        double t = 0;
        try {
          for (int s = 0; s < warm + a.decode_steps; ++s) {
            DecodeBatch d = decode_batch(batch, ctx + s, pps, c.vocab_size);
            if (s == warm) {
              synchronize(Device::Cuda);
              t = now_s();
            }
            const bool profiled = a.profile && s + 1 == warm + a.decode_steps;
            if (profiled) profiler_range(true);
            m.forward(d.step, pools);
            if (profiled) profiler_range(false);
          }
          synchronize(Device::Cuda);
        } catch (const Error& e) {
          fmt::print("  {:>6} {:>5} {:>7} failed: {}\n", ctx, batch, v, e.what());
          continue;
        }
        const double step_s = (now_s() - t) / a.decode_steps;
        fmt::print("  {:>6} {:>5} {:>7} {:>9.3f} {:>10.1f} {:>9.2f} {:>9.3f} {:>8.1f}% {:>7.1f}%\n", ctx,
                   batch, v, step_s * 1e3, batch / step_s, gb(bytes), bytes / bw * 1e3,
                   100.0 * bytes / bw / step_s, 100.0 * weights / bw / step_s);
      }
    }
}

void run_prefill(DeviceModel& m, const GpuBenchArgs& a, const DeviceModelOptions& base, double flops_rate) {
  const ModelConfig& c = m.config();
  const StepBytes sb = step_bytes(m);
  fmt::print("prefill (one sequence, chunks of {} tokens, last-token logits):\n", a.prefill_chunk);
  fmt::print("  {:>7} {:>9} {:>9} {:>10} {:>11} {:>9} {:>8}\n", "tokens", "variant", "s", "tok/s",
             "floor TFLOP", "floor s", "floor%");
  // One prefill of L tokens in chunks; seconds, or < 0 when the pools do not fit.
  auto run_point = [&](const std::string& v, int L, bool profile) -> double {
    m.set_execution(variant_options(base, v));
    int64_t pps = 0;
    DevicePools pools = m.make_pools(Device::Cuda, false, a.page_tokens);
    try {
      pools = make_filled_pools(m, 1, L, a.page_tokens, &pps);
    } catch (const Error& e) {
      fmt::print("  {:>7} skipped: {}\n", L, e.what());
      return -1.0;
    }
    pools.zero_slot(0);
    std::vector<int32_t> pages(static_cast<size_t>(pps)), ids(static_cast<size_t>(L));
    for (int64_t p = 0; p < pps; ++p) pages[size_t(p)] = int32_t(p);
    for (int i = 0; i < L; ++i) ids[size_t(i)] = int32_t((int64_t(i) * 7919 + 17) % c.vocab_size);
    synchronize(Device::Cuda);
    const double t0 = now_s();
    for (int64_t s0 = 0; s0 < L; s0 += a.prefill_chunk) {
      const int64_t n = std::min<int64_t>(a.prefill_chunk, L - s0);
      DeviceStep step;
      DeviceSeqStep s;
      s.tokens = std::span<const int32_t>(ids).subspan(size_t(s0), size_t(n));
      s.n_past = s0;
      s.pages = pages;
      s.live_slot = 0;
      s.logits = s0 + n == L ? LogitsWant::Last : LogitsWant::None;
      s.argmax_only = true;
      step.seqs.push_back(s);
      // Profiled: the last chunk (it attends over the longest context).
      if (profile && s0 + n == L) profiler_range(true);
      m.forward(step, pools);
      if (profile && s0 + n == L) profiler_range(false);
    }
    synchronize(Device::Cuda);
    return now_s() - t0;
  };
  // One untimed chunk first (cuBLASLt's first calls, the memory pool growing).
  if (!a.prefill_variants.empty() && !a.prefill.empty())
    run_point(a.prefill_variants[0], std::min(a.prefill_chunk, a.prefill[0]), false);
  for (const std::string& v : a.prefill_variants)
    for (int L : a.prefill) {
      if (v == "absorbed" && L > a.absorbed_max) continue;
      if (v == "per-expert" && L > a.per_expert_max) continue;
      const double secs = run_point(v, L, a.profile);
      if (secs < 0) continue;
      // GEMMs: 2 FLOPs per active parameter per token (the lm_head only for the last token: the
      // chunks ask for last-token logits); causal attention of the MLA layers in the non-absorbed
      // form (QKᵀ over dq, PV over dv per head): 2·H·(dq + dv)·L²/2 per layer.
      const double gemm =
          2.0 * (sb.active_params_per_token - sb.lm_head_params) * L + 2.0 * sb.lm_head_params;
      const double attn = double(c.n_mla_layers()) * 2.0 * c.mla.n_head *
                          (c.mla.qk_head_dim() + c.mla.v_head_dim) * double(L) * double(L) / 2.0;
      const double floor_s = (gemm + attn) / flops_rate;
      fmt::print("  {:>7} {:>9} {:>9.3f} {:>10.1f} {:>11.1f} {:>9.3f} {:>7.1f}%\n", L, v, secs, L / secs,
                 (gemm + attn) / 1e12, floor_s, 100.0 * floor_s / secs);
    }
}

}  // namespace

void run_gpu_model_bench(const GpuBenchArgs& a) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each table row as soon as it is measured
  DS_CHECK(a.decode_steps >= 1 && a.page_tokens >= 1 && a.prefill_chunk >= 1,
           "bench gpu: --decode-steps, --page-tokens and --prefill-chunk must be >= 1");
  ModelConfig cfg = ModelConfig::load(a.model.empty() ? a.config : a.model);  // bad input first
  if (a.layers > 0) {
    // The first `layers` layers of the config (the same layer kinds and shapes): a model scaled to fit.
    DS_CHECK(a.model.empty() && a.layers <= cfg.n_layer,
             "bench gpu: --layers {} needs random weights and at most the config's {} layers", a.layers,
             cfg.n_layer);
    cfg.n_layer = a.layers;
    cfg.layer_kind.resize(size_t(a.layers));
    cfg.validate();
  }
  DS_CHECK(cuda_available(), "bench gpu: no usable CUDA device (a CPU-only build, or no GPU / driver)");
  DeviceModelOptions opt;
  opt.device = Device::Cuda;
  opt.precision = Precision::BF16;
  opt.exact_kda = false;
  const double bw = measure_copy_bandwidth();
  const double rate = measure_gemm_rate(8192);
  fmt::print("device copy bandwidth {:.0f} GB/s (read + write), bf16 linear 8192^3 {:.0f} TFLOP/s\n",
             bw / 1e9, rate / 1e12);
  if (!a.moe_gemm.empty()) run_moe_gemm_bench(cfg, a.moe_gemm);
  if (!a.mla_flash.empty()) run_mla_flash_bench(cfg, a.prefill_chunk, a.mla_flash);
  if (a.kernels) run_kernel_bench(bw);
  if (a.skip_decode && a.skip_prefill) return;
  const double t0 = now_s();
  std::unique_ptr<DeviceModel> m =
      a.model.empty() ? DeviceModel::random(cfg, opt, a.seed) : DeviceModel::load(a.model, opt);
  synchronize(Device::Cuda);
  fmt::print("{} bf16 weights of {} ({} layers, {} experts{}): {:.1f} GB on the GPU in {:.1f} s\n",
             a.model.empty() ? "random" : "checkpoint", a.model.empty() ? a.config : a.model, cfg.n_layer,
             cfg.moe.n_expert, cfg.quant.mxfp4_experts ? " in MXFP4" : "", gb(double(m->weights().bytes())),
             now_s() - t0);
  const StepBytes sb = step_bytes(*m);
  fmt::print(
      "  per decode step: {:.2f} GB non-expert weights (lm_head included), {:.1f} MB per routed expert, "
      "{} MoE layers\n",
      gb(sb.shared), sb.expert / 1e6, sb.moe_layers);
  if (!a.skip_decode) run_decode(*m, a, opt, bw);
  if (!a.skip_prefill) run_prefill(*m, a, opt, rate);
}

void add_gpu_model_bench_options(CLI::App& cmd, GpuBenchArgs& a) {
  auto* config = cmd.add_option("--config", a.config,
                                "Model config.json or folder (default: the Kimi-Linear-48B-A3B profile)");
  cmd.add_option(
         "--model", a.model,
         "Checkpoint folder (config.json + safetensors) whose weights are loaded instead of random ones")
      ->excludes(config);
  cmd.add_option("--layers", a.layers,
                 "Only the config's first N layers (random weights): a model scaled to fit one GPU");
  cmd.add_option("--batch", a.batches, "Decode batch sizes")->delimiter(',');
  cmd.add_option("--context", a.contexts, "Decode context lengths (tokens already in each sequence)")
      ->delimiter(',');
  cmd.add_option(
         "--variants", a.variants,
         "Decode variants: host, device, graphs, graphs-cublas, graphs-grouped, graphs-rows8, graphs-f32mla, "
         "graphs-ltheads; <variant>~<a+b>: with env a and b (NAME=value) or the PDL kernels whose names hold "
         "a "
         "or b as no-ops (DS_ABLATE)")
      ->delimiter(',');
  cmd.add_option("--prefill", a.prefill, "Prefill lengths (tokens)")->delimiter(',');
  cmd.add_flag("--skip-decode", a.skip_decode, "Do not run the decode points");
  cmd.add_flag("--skip-prefill", a.skip_prefill, "Do not run the prefill points");
  cmd.add_option("--prefill-chunk", a.prefill_chunk, "Tokens per prefill step");
  cmd.add_option(
         "--prefill-variants", a.prefill_variants,
         "Prefill variants: device (MLA expanded per head, flash kernel), dense-mla (MLA absorbed "
         "through cuBLASLt products), mma-moe (grouped expert GEMMs on mma.sync, not wgmma), absorbed "
         "(MLA on the CUDA cores), per-expert (device with one cuBLASLt product per routed expert)")
      ->delimiter(',');
  cmd.add_option("--absorbed-max", a.absorbed_max, "Longest prefill of the absorbed variant (tokens)");
  cmd.add_option("--per-expert-max", a.per_expert_max, "Longest prefill of the per-expert variant (tokens)");
  cmd.add_option("--decode-steps", a.decode_steps, "Timed decode steps per point");
  cmd.add_option("--page-tokens", a.page_tokens, "Tokens per MLA latent page");
  cmd.add_option("--seed", a.seed, "Seed of the random weights");
  cmd.add_option(
         "--moe-gemm", a.moe_gemm,
         "Token counts of a routed-experts-alone table (grouped GEMMs vs one cuBLASLt product per expert)")
      ->delimiter(',');
  cmd.add_option("--mla-flash", a.mla_flash,
                 "Prefill lengths of a flash-MLA-alone table (the last chunk of each, every pipeline form)")
      ->delimiter(',');
  cmd.add_flag("--kernels", a.kernels,
               "First time the weight-streaming kernels alone against the copy bandwidth");
  cmd.add_flag("--profile", a.profile,
               "Profiler capture range (e.g. ncu --profile-from-start off) around the last timed decode step "
               "of each point and the last prefill chunk");
}

}  // namespace ds::bench
