#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace ds {

CostModel::CostModel(const ModelProfile& model, const HardwareProfile& hw, CostOptions opt) : opt_(opt) {
  DS_CHECK(opt.tp >= 1, "tensor parallel size must be >= 1, got {}", opt.tp);
  DS_CHECK(opt.kda_chunk_tokens >= 1, "KDA chunk size must be >= 1, got {}", opt.kda_chunk_tokens);
  const double tp = opt.tp;
  const ModelConfig& c = model.config;
  dense_bytes_gpu_ = model.dense_bytes_per_gpu(opt.tp);
  expert_bytes_gpu_ = model.expert_bytes() / tp;
  n_moe_layers_ = model.n_moe_layers();
  n_expert_ = c.moe.n_expert;
  top_k_ = c.moe.n_expert_per_token;
  routed_flops_token_ = model.routed_linear_flops_per_token() / tp;
  dense_flops_token_ = model.linear_flops_per_token() / tp - routed_flops_token_;
  lm_head_flops_ = model.lm_head_flops() / tp;
  kv_bytes_token_ = double(model.kv_bytes_per_token(opt.kv_dtype_bytes));
  state_bytes_gpu_ = double(model.kda_state_bytes()) / tp;
  hidden_ = c.hidden;
  mla_key_decode_ = model.mla_flops_per_key(true) / tp;
  mla_key_prefill_ = model.mla_flops_per_key(false) / tp;
  mla_expand_ = model.mla_expand_flops_per_context_token() / tp;
  kda_token_decode_ = model.kda_flops_per_token(true, opt.kda_chunk_tokens) / tp;
  kda_token_prefill_ = model.kda_flops_per_token(false, opt.kda_chunk_tokens) / tp;
  // Two allreduces of the bf16 hidden state per layer (after the mixer and after the FFN);
  // a ring allreduce moves 2 (tp - 1) / tp of the message over each GPU's link.
  if (opt.tp > 1) {
    allreduce_bytes_token_ = 2.0 * c.n_layer * hidden_ * 2.0 * 2.0 * (tp - 1) / tp;
    allreduce_calls_ = 2.0 * c.n_layer;
  }
  mem_bw_ = hw.hbm_bw_bytes_s * hw.memory_efficiency;
  gemm_peak_ = hw.peak_flops(16) * hw.gemm_efficiency;
  // MXFP4 experts run as W4A8 (MXFP8 activations, as in the K3 QAT recipe) at the fp8 rate.
  expert_peak_ =
      hw.peak_flops(model.weight(WeightKind::RoutedExpert).bits < 16 ? 8 : 16) * hw.gemm_efficiency;
  attn_peak_ = hw.peak_flops(opt.kv_dtype_bytes == 1 ? 8 : 16) * hw.attention_efficiency;
  kda_peak_ = hw.peak_flops(16) * hw.attention_efficiency;
  link_bw_ = hw.nvlink_bw_bytes_s * hw.comm_efficiency;
  host_bw_ = hw.host_link_bw_bytes_s * hw.host_link_efficiency;
  comm_latency_s_ = hw.comm_latency_s;
}

double CostModel::distinct_experts(int64_t n_tokens) const {
  if (n_tokens <= 0 || n_expert_ <= 0) return 0;
  return n_expert_ * (1.0 - std::pow(1.0 - top_k_ / n_expert_, double(n_tokens)));
}

StepCost CostModel::step(const StepWork& work) const {
  StepCost cost;
  double n_tok = 0, n_seq = 0, host_bytes = 0, copies = 0;
  double attn_flops = 0, attn_bytes = 0, kda_flops = 0, kda_bytes = 0;
  for (const SeqWork& s : work.seqs) {
    DS_CHECK(s.n_new_tokens >= 0 && s.n_context_tokens >= 0 && s.n_checkpoints >= 0 && s.n_restores >= 0 &&
                 s.host_load_bytes >= 0,
             "negative work in a step: new {} context {} checkpoints {} restores {} host bytes {}",
             s.n_new_tokens, s.n_context_tokens, s.n_checkpoints, s.n_restores, s.host_load_bytes);
    host_bytes += double(s.host_load_bytes);
    copies += double(s.n_checkpoints + s.n_restores);
    if (s.n_new_tokens == 0) continue;
    n_tok += double(s.n_new_tokens);
    n_seq += 1;
    // Same formulas as ModelProfile::mla_attention_flops / kda_flops, with per-GPU coefficients.
    const double n = double(s.n_new_tokens), ctx = double(s.n_context_tokens);
    const double keys = n * ctx + n * (n + 1) / 2;
    const bool decode = s.n_new_tokens == 1;
    attn_flops += decode ? mla_key_decode_ * keys : mla_key_prefill_ * keys + mla_expand_ * ctx;
    attn_bytes += (ctx + n) * kv_bytes_token_;  // read the context, write the new tokens
    kda_flops += (decode ? kda_token_decode_ : kda_token_prefill_) * n;
    kda_bytes += 2.0 * state_bytes_gpu_;  // read the live state, write it back
  }
  if (n_tok > 0) {
    const double weight_bytes =
        dense_bytes_gpu_ + n_moe_layers_ * distinct_experts(int64_t(n_tok)) * expert_bytes_gpu_;
    const double dense_flops = n_tok * dense_flops_token_ + n_seq * lm_head_flops_;
    const double routed_flops = n_tok * routed_flops_token_;
    cost.weights_s = weight_bytes / mem_bw_;
    cost.gemm_s = dense_flops / gemm_peak_ + routed_flops / expert_peak_;
    cost.attn_s = std::max(attn_flops / attn_peak_, attn_bytes / mem_bw_);
    cost.kda_s = std::max(kda_flops / kda_peak_, kda_bytes / mem_bw_);
    cost.comm_s = n_tok * allreduce_bytes_token_ / link_bw_ + allreduce_calls_ * comm_latency_s_;
    cost.flops = (dense_flops + routed_flops + attn_flops + kda_flops) * opt_.tp;
    cost.bytes = (weight_bytes + attn_bytes + kda_bytes) * opt_.tp;
  }
  const double copy_bytes = copies * 2.0 * state_bytes_gpu_;  // device-to-device: read + write
  cost.checkpoint_s = copy_bytes / mem_bw_;
  cost.transfer_s = host_bytes / host_bw_;
  cost.bytes += copy_bytes * opt_.tp;
  cost.total_s = std::max(cost.weights_s, cost.gemm_s) + cost.attn_s + cost.kda_s + cost.checkpoint_s +
                 cost.comm_s + cost.transfer_s;
  return cost;
}

double CostModel::prefill_time_s(int64_t prompt_tokens, int64_t chunk_tokens) const {
  DS_CHECK(prompt_tokens >= 0, "prompt length must be >= 0, got {}", prompt_tokens);
  DS_CHECK(chunk_tokens >= 1, "prefill chunk must be >= 1 token, got {}", chunk_tokens);
  double t = 0;
  StepWork w;
  w.seqs.resize(1);
  for (int64_t done = 0; done < prompt_tokens; done += chunk_tokens) {
    w.seqs[0].n_new_tokens = std::min(chunk_tokens, prompt_tokens - done);
    w.seqs[0].n_context_tokens = done;
    t += step(w).total_s;
  }
  return t;
}

double CostModel::decode_step_time_s(int64_t batch, int64_t context_tokens) const {
  DS_CHECK(batch >= 0 && context_tokens >= 0, "decode batch {} and context {} must be >= 0", batch,
           context_tokens);
  StepWork w;
  w.seqs.assign(size_t(batch), SeqWork{1, context_tokens, 0, 0, 0});
  return step(w).total_s;
}

}  // namespace ds
