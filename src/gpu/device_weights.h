// DeviceWeights: a Kimi Linear / Kimi K3 checkpoint's tensors resident on one device (CUDA HBM, or
// host memory for Device::Cpu — the same code path, which the CPU tests exercise), uploaded once
// from the bound safetensors (model/weights.h). GEMM weights take the chosen precision (f32 for
// the golden f32 mode, bf16 as the checkpoint stores them); MXFP4 routed experts stay packed (the
// expert GEMM dequantises them); small parameters (norms, conv taps, gates, AttnRes queries) are
// f32. MLA's kv_b_proj is kept as per-head views W_UV,h and a transposed copy W_UK,hᵀ for the
// absorbed attention. Owns the memory; views stay valid while the object lives.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_view.h"
#include "core/weight_view.h"
#include "kernels/expert_linear.h"
#include "kernels/memory.h"
#include "kernels/moe.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace ds {

enum class Precision : uint8_t { F32, BF16 };  // dtype of the device GEMM weights

std::string_view precision_name(Precision p);  // "f32" | "bf16"

// A GLU MLP (dense layer-0 MLP, shared experts, one routed expert): gate/up [I, In], down [In, I].
struct DeviceGlu {
  ExpertLinear gate, up, down;
  int64_t width() const { return gate.cols(); }
  int64_t intermediate() const { return gate.rows(); }
};

// KDA self_attn. P = H*K.
struct DeviceKda {
  WeightView q, k, v;      // [P, D]
  WeightView f_a, f_b;     // [K, D], [P, K]
  WeightView b;            // [H, D]
  WeightView g_a, g_b, g;  // low-rank [K, D] / [P, K] (Kimi Linear) or full-rank g [P, D] (K3)
  WeightView o;            // [D, P]
  TensorView taps;         // f32 [3P, W]: q, k, v conv taps (tap W-1 = current token)
  TensorView a_log;        // f32 [H]
  TensorView dt_bias;      // f32 [P]
  TensorView o_norm;       // f32 [K]
};

// MLA self_attn. R = kv_lora_rank, dr = qk_rope_head_dim.
struct DeviceMla {
  WeightView q;                  // [H*dq, D] (q_lora_rank == 0)
  WeightView q_a, q_b;           // [rq, D], [H*dq, rq] (q-LoRA)
  TensorView q_a_norm;           // f32 [rq]
  WeightView kv_a_c, kv_a_pe;    // kv_a_proj_with_mqa rows [0, R) and [R, R + dr)
  TensorView kv_a_norm;          // f32 [R]
  std::vector<WeightView> uk_t;  // [H] W_UK,hᵀ [R, dn], head h = rows [h*R, (h+1)*R) of one matrix
  std::vector<WeightView> uv;    // [H] W_UV,h [dv, R] (rows of kv_b_proj: head h is uv[0] + h*(dn+dv)*R)
  WeightView kv_b;               // [H*(dn+dv), R] kv_b_proj whole (head h: dn W_UK rows, then dv W_UV rows)
  WeightView g;                  // [H*dv, D] sigmoid output gate (K3), or unset
  WeightView o;                  // [D, H*dv]
};

struct DeviceMoe {
  WeightView router;               // [E, D]
  std::vector<float> bias;         // host f32 [E] e_score_correction_bias (selection only)
  TensorView bias_device;          // the same f32 [E] on the device (unset: no bias)
  std::vector<DeviceGlu> experts;  // [E]
  GroupedExperts grouped;          // the experts' pointer tables (ptrs == nullptr: mixed experts)
  std::optional<DeviceGlu> shared;
  WeightView latent_down, latent_up;  // LatentMoE [L, D], [D, L] (K3), or unset
  TensorView latent_norm;             // f32 [L] or unset
};

// The grouped view of the routed experts: their gate, up and down pointers (MXFP4: codes, and the
// scales in a second table) in tables that `store` copies to the experts' device, with the config's
// GLU activation. Empty (ptrs == nullptr) if the experts' shapes or formats differ.
GroupedExperts grouped_table(const std::vector<DeviceGlu>& experts, const ExpertAct& act,
                             const std::function<const void* const*(const std::vector<const void*>&)>& store);

// The routed experts' activation of a config (SiLU-GLU, or SiTU-GLU with its betas).
ExpertAct expert_act(const ModelConfig& cfg);

struct DeviceLayer {
  LayerKind kind = LayerKind::Kda;
  TensorView input_norm, post_norm;  // f32 [D]
  std::optional<DeviceKda> kda;
  std::optional<DeviceMla> mla;
  std::optional<DeviceGlu> mlp;  // dense FFN
  std::optional<DeviceMoe> moe;
};

class DeviceWeights {
 public:
  // progress(done_bytes, total_bytes) after every tensor. Throws ds::Error naming a tensor whose
  // dtype cannot be uploaded.
  static DeviceWeights upload(const ModelConfig& cfg, const ModelWeights& w, Device device,
                              Precision precision,
                              const std::function<void(int64_t, int64_t)>& progress = {});

  Device device = Device::Cpu;
  Precision precision = Precision::F32;
  WeightView embed;       // [vocab, D]
  WeightView lm_head;     // [vocab, D]
  TensorView final_norm;  // f32 [D]
  std::vector<DeviceLayer> layers;
  TensorView res_attn, res_mlp, res_out;  // AttnRes folded queries f32 [n_layer, D], [n_layer, D], [D]

  // The same structure with random values made on the device (benchmarks of real-size shapes
  // without their checkpoint): GEMM weights U(-a, a) with a = sqrt(3 / in_features) (unit gain),
  // norms 1, small conv taps and gates, zero correction bias; routed experts dense of the chosen
  // precision, or with cfg.quant.mxfp4_experts MXFP4 (random codes, one power-of-two scale per
  // matrix that gives about the dense experts' rms).
  static DeviceWeights random(const ModelConfig& cfg, Device device, Precision precision, uint64_t seed);

  int64_t bytes() const;  // resident bytes
  const std::map<std::string, int64_t>& bytes_by_part() const { return parts_; }

 private:
  std::vector<Buffer> storage_;
  std::map<std::string, int64_t> parts_;  // "embedding + lm_head", "attention", "routed experts", ...
  friend class WeightUploader;
  friend class RandomWeights;
};

}  // namespace ds
