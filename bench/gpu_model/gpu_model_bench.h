// The whole-model GPU benchmark (`deltaserve bench gpu`, bench_gpu_model): the device forward at a real
// model's shapes with random bf16 weights made on the GPU (no checkpoint): decode tok/s at each batch size
// and context next to the weight + KV + state streaming floor (bandwidth measured by a device copy), and
// chunked prefill tok/s next to the tensor-core floor (rate measured by a large bf16 linear). Each decode
// point runs once per execution variant, so that one run shows the effect of every optimisation:
//   host           routing on the host, one cuBLASLt GEMM per expert and per MLA head (reference),
//   device         routing + grouped experts + batched heads + few-row GEMV on the device, eager,
//   graphs         the same, each decode step replayed as a CUDA graph,
//   graphs-cublas  graphs with the dense projections through cuBLASLt instead of the GEMV,
//   graphs-grouped graphs with the grouped expert GLU + combine at batch 1 too (no moe_token_glu),
//   graphs-rows8   graphs with the GEMV and moe_token_glu up to 8 rows,
//   absorbed       device, with prefill MLA attention in the absorbed form on the CUDA cores (the
//                  default prefill takes it through the tensor cores: mla_attention_dense),
//   per-expert     device, with the prefill's routed experts as one cuBLASLt product per active
//                  expert and matrix (the default takes the grouped GEMMs: moe_gemm_glu / _down).
// The prefill table starts after one untimed chunk. With `model` set, the weights are a checkpoint folder
// loaded onto the device instead (the same shapes and timings as random weights, but the same numbers
// as another implementation run on that folder).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace ds::bench {

struct GpuBenchArgs {
  std::string config = "data/profiles/models/kimi-linear-48b";
  std::string model;  // checkpoint folder (config.json + safetensors); empty: random weights of `config`
  int layers = 0;     // > 0: only the config's first `layers` layers (random weights)
  std::vector<int> batches = {1, 8, 64};
  std::vector<int> contexts = {4096, 32768};
  std::vector<std::string> variants = {"host", "device", "graphs"};
  std::vector<int> prefill = {8192, 32768, 131072};
  int prefill_chunk = 8192;
  std::vector<std::string> prefill_variants = {"device"};
  int absorbed_max = 8192;  // the absorbed variant's prefill is quadratic on the CUDA cores
  int per_expert_max = 32768;
  bool skip_decode = false, skip_prefill = false;
  std::vector<int> moe_gemm;   // token counts of the routed-experts-alone table (empty: not run)
  std::vector<int> mla_flash;  // prefill lengths of the flash-MLA-alone table (empty: not run)
  bool kernels = false;        // the weight-streaming kernels alone first (run_kernel_bench)
  bool profile = false;        // profiler range around one decode step per point and the last prefill chunk
  int decode_steps = 16;
  int page_tokens = 64;
  uint64_t seed = 1;
};

// The options of `deltaserve bench gpu` and of bench_gpu_model, into `a`.
void add_gpu_model_bench_options(CLI::App& cmd, GpuBenchArgs& a);
// Prints the tables to stdout. Throws ds::Error without a CUDA device.
void run_gpu_model_bench(const GpuBenchArgs& a);
// The decode steps' weight-streaming kernels alone (few-row GEMV, cuBLASLt, token-major and grouped
// MoE) at the Kimi-Linear-48B-A3B shapes, against the copy bandwidth `bw` (bytes/s).
void run_kernel_bench(double bw);

}  // namespace ds::bench
