// DeviceModel: the whole Kimi Linear / Kimi K3 forward on one device over device-resident weights
// (DeviceWeights) and step state (DevicePools). Every operation goes through the kernels/
// interfaces, so the same code runs on CUDA (the GPU forward) and on the CPU (Device::Cpu: how CI
// tests the layout, paging and checkpoint logic against the golden fixtures).
//  - activations f32 between operations; GEMMs through `linear` (cuBLASLt on CUDA) with weights in
//    the chosen precision (bf16 GEMM inputs are cast just before the product);
//  - KDA: q/k/v projections into one [T, 3P] matrix, the batched short conv over the slot windows,
//    the batched prefill (exact f32 recurrence in f32 mode or at unaligned checkpoints, the chunked
//    kernel in bf16 mode) or, when every sequence brings one token, the fused decode kernel;
//  - MLA: latents written into the sequence's pages, absorbed attention over the pages for prefill
//    and decode alike (q̂ = W_UKᵀ q_nope per head, o = W_UV ctx per head);
//  - MoE: router GEMM, routing on the host (layers/moe_router.h, the CPU rule bit for bit), token
//    permutation, one GLU per active expert over its rows, weighted combine, shared experts;
//    K3's LatentMoE projections and norm, SiTU-GLU, MXFP4 experts kept packed;
//  - K3 Block AttnRes in the reference or the two-phase form.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <string>

#include "gpu/device_pools.h"
#include "gpu/device_step.h"
#include "gpu/device_weights.h"
#include "layers/attn_res.h"
#include "model/model_config.h"

namespace ds {

struct ForwardContext;
struct DevMat;

struct DeviceModelOptions {
  Device device = Device::Cpu;
  Precision precision = Precision::F32;
  AttnResMode attn_res = AttnResMode::Reference;
  // Exact f32 KDA recurrence for prefill (default: in f32 mode); otherwise the chunked kernel.
  bool exact_kda = true;
  // MoE routing, grouping and (up to kMoeGroupedMaxTokens tokens) the grouped expert GLU on the
  // device; false: routing on the host and one GLU per active expert (the reference path).
  bool device_moe = true;
  bool batched_heads = true;  // MLA per-head projections as one batched product (false: per head)
  // Projections of up to gemv_max_rows rows (decode) through linear_few_rows (no bf16 cast, one
  // pass over the weight) instead of cuBLASLt; on the H200 the GEMV wins at 1-2 rows, cuBLASLt from 4.
  bool few_row_gemv = true;
  int64_t gemv_max_rows = 2;
  // With few_row_gemv, MLA's per-head products of up to gemv_max_rows rows (bf16) through
  // linear_few_rows_heads (one PDL launch each) instead of a cast and a cuBLASLt product.
  bool heads_gemv = true;
  // MoE layers of up to this many tokens (decode) through moe_token_glu: routed and shared experts
  // token-major in two launches after the router (device_moe, dense experts and shared expert).
  // On the H200 at the 48B shape: 69% of the copy bandwidth at 1 token and 87% at 8, against 50%
  // and 61% for group + grouped GLU + combine + shared GLU (docs/perf.md, round 3).
  int64_t token_moe_max_tokens = 8;
  // bf16 on CUDA, prefill steps whose sequences all bring at least kMlaDenseMinTokens tokens: MLA
  // attention per sequence through the tensor cores (mla_attention_dense) instead of the absorbed
  // kernel on the CUDA cores.
  bool dense_mla = true;
  // With dense_mla, steps whose sequences are all such chunks: MLA in the expanded form (keys and values
  // per head from kv_b_proj, one flash-style kernel: kernels/mla_prefill.h), 3.4x fewer FLOPs per score
  // than the absorbed form and no scores in memory; false: mla_attention_dense.
  bool flash_mla = true;
  // bf16 on CUDA: the absorbed MLA attention (decode tokens, short sequences) with its score and
  // context products in bf16 on the tensor cores (mla_decode_mma.cu) instead of f32 on the CUDA cores.
  bool mma_mla = true;
  // bf16 on CUDA, MoE layers of more than kMoeGroupedMaxTokens tokens: the routed experts as two
  // grouped GEMM launches over every expert (moe_gemm_glu, moe_gemm_down) instead of one cuBLASLt
  // product per active expert and matrix after a host copy of the group offsets.
  bool grouped_gemm = true;
  // The grouped GEMMs of bf16 experts on Hopper's warpgroup MMA (MoeGemmKernel::Auto); false: the
  // mma.sync kernel.
  bool wgmma_moe = true;
  // Decode steps (one token per sequence, no checkpoints, last-row logits) recorded once per batch
  // size as a graph and replayed; needs device_moe on every MoE layer, else steps run eagerly.
  bool decode_graphs = false;
};

class DeviceModel {
 public:
  // Loads config.json + safetensors from a checkpoint folder straight onto the device; prints a
  // progress bar (terminal only) and the memory plan to `log` when given. Throws ds::Error.
  static std::unique_ptr<DeviceModel> load(const std::string& dir, const DeviceModelOptions& opt,
                                           std::ostream* log = nullptr);

  // A model of `cfg`'s shapes with random weights made on the device (DeviceWeights::random).
  static std::unique_ptr<DeviceModel> random(const ModelConfig& cfg, const DeviceModelOptions& opt,
                                             uint64_t seed);

  const ModelConfig& config() const { return cfg_; }
  const DeviceModelOptions& options() const { return opt_; }
  Device device() const { return opt_.device; }
  const DeviceWeights& weights() const { return w_; }
  KdaStateShape kda_state_shape() const;
  // Pools for this model on `device` (pinned: host tier).
  DevicePools make_pools(Device device, bool pinned, int64_t page_tokens) const;

  // Runs the step: writes the new tokens' latents into their pages, advances the live slots,
  // writes the checkpoint slots, returns the requested logits. The pools must be on the model's
  // device and hold every id of the step. Validates the step first (ds::Error, nothing written).
  // With decode_graphs, a decode step of a batch size seen before replays its graph. Not safe to
  // call from two threads at once.
  DeviceForwardResult forward(const DeviceStep& step, DevicePools& pools) const;
  int graphs_recorded() const { return int(graphs_.size()); }
  int64_t graph_replays() const { return graph_replays_; }  // decode steps served by a replay
  // Changes the options that leave the weights alone (everything but device and precision) and
  // drops the recorded graphs.
  void set_execution(const DeviceModelOptions& opt);

 private:
  struct DecodeGraph;
  DeviceModel();
  void set_layer_indices();

 public:
  ~DeviceModel();

 private:
  void validate(const DeviceStep& step, const DevicePools& pools) const;
  ForwardContext make_context(const DeviceStep& step, DevicePools& pools, int64_t page_capacity = 0) const;
  bool graph_eligible(const DeviceStep& step) const;
  // Embedding and every layer: the final hidden rows in x [T, D] (before the final norm).
  void run_layers(const ForwardContext& ctx, const DevMat& x, DeviceForwardResult* captured) const;
  DeviceForwardResult forward_eager(const DeviceStep& step, DevicePools& pools) const;
  DeviceForwardResult forward_graph(const DeviceStep& step, DevicePools& pools) const;

  ModelConfig cfg_;
  DeviceModelOptions opt_;
  DeviceWeights w_;
  std::vector<int> mla_index_, kda_index_;  // [n_layer]: index among MLA / KDA layers, or -1
  mutable std::map<int, std::unique_ptr<DecodeGraph>> graphs_;  // by batch size
  mutable int64_t graph_replays_ = 0;
};

}  // namespace ds
