#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace ds {

void accumulate(StepCost& sum, const StepCost& c) {
  sum.total_s += c.total_s;
  sum.weights_s += c.weights_s;
  sum.attn_s += c.attn_s;
  sum.kda_s += c.kda_s;
  sum.gemm_s += c.gemm_s;
  sum.transfer_s += c.transfer_s;
  sum.checkpoint_s += c.checkpoint_s;
  sum.comm_s += c.comm_s;
  sum.overhead_s += c.overhead_s;
  sum.flops += c.flops;
  sum.bytes += c.bytes;
}

void SpecDecode::validate() const {
  DS_CHECK(draft_tokens >= 0 && draft_tokens <= 64, "speculative draft tokens must be in [0, 64], got {}",
           draft_tokens);
  if (!enabled()) return;
  DS_CHECK(acceptance_length >= 1 && acceptance_length <= draft_tokens + 1,
           "speculative acceptance length must be in [1, draft tokens + 1 = {}], got {}", draft_tokens + 1,
           acceptance_length);
  DS_CHECK(draft_cost_fraction >= 0 && draft_cost_fraction <= 10,
           "speculative draft cost fraction must be in [0, 10], got {}", draft_cost_fraction);
}

CostModel::CostModel(const ModelProfile& model, const HardwareProfile& hw, CostOptions opt) : opt_(opt) {
  DS_CHECK(opt.tp >= 1, "tensor parallel size must be >= 1, got {}", opt.tp);
  DS_CHECK(opt.dcp >= 1 && opt.tp % opt.dcp == 0,
           "decode context parallel size must be >= 1 and divide the TP size {}, got {}", opt.tp, opt.dcp);
  DS_CHECK(opt.kda_chunk_tokens >= 1, "KDA chunk size must be >= 1, got {}", opt.kda_chunk_tokens);
  DS_CHECK(opt.expert_compute_bits == 0 || opt.expert_compute_bits == 4 || opt.expert_compute_bits == 8 ||
               opt.expert_compute_bits == 16,
           "expert compute precision must be 4, 8 or 16 bits (0 = auto), got {}", opt.expert_compute_bits);
  opt.spec.validate();
  const double tp = opt.tp;
  const ModelConfig& c = model.config;
  dense_bytes_gpu_ = model.dense_bytes_per_gpu(opt.tp);
  expert_bytes_gpu_ = model.expert_bytes() / tp;
  n_moe_layers_ = model.n_moe_layers();
  n_layer_ = c.n_layer;
  n_mla_layers_ = c.n_mla_layers();
  n_expert_ = c.moe.n_expert;
  top_k_ = c.moe.n_expert_per_token;
  routed_flops_token_ = model.routed_linear_flops_per_token() / tp;
  // Every rank multiplies by its shard of a sharded weight, but by the whole of a replicated one
  // (the same bytes it streams): FLOPs per GPU follow the bytes per GPU.
  for (int k = 0; k < kWeightKinds; ++k) {
    const auto kind = WeightKind(k);
    if (kind == WeightKind::Embedding || kind == WeightKind::RoutedExpert || kind == WeightKind::LmHead)
      continue;
    const WeightGroup& g = model.weight(kind);
    dense_flops_token_ += 2.0 * (double(g.params - g.replicated_params) / tp + double(g.replicated_params));
  }
  lm_head_flops_ = model.lm_head_flops() / tp;
  kv_bytes_token_ = double(model.kv_bytes_per_token(opt.kv_dtype_bytes));
  state_bytes_gpu_ = double(model.kda_state_bytes()) / tp;
  mla_key_decode_ = model.mla_flops_per_key(true) / tp;
  mla_key_prefill_ = model.mla_flops_per_key(false) / tp;
  mla_expand_ = model.mla_expand_flops_per_context_token() / tp;
  kda_token_decode_ = model.kda_flops_per_token(true, opt.kda_chunk_tokens) / tp;
  kda_token_prefill_ = model.kda_flops_per_token(false, opt.kda_chunk_tokens) / tp;
  // Two allreduces of the bf16 hidden state per layer (after the mixer and after the FFN);
  // a ring allreduce moves 2 (tp - 1) / tp of the message over each GPU's link.
  if (opt.tp > 1) {
    allreduce_bytes_token_ = 2.0 * c.n_layer * double(c.hidden) * 2.0 * 2.0 * (tp - 1) / tp;
    allreduce_calls_ = 2.0 * c.n_layer;
  }
  // DCP: per MLA layer and decoded token, the group's bf16 absorbed queries (latent + rope per head)
  // are gathered and the partial latent outputs scattered back: (dcp - 1) / dcp of both per GPU.
  if (opt.dcp > 1) {
    const MlaConfig& m = c.mla;
    const double per_layer = double(m.n_head) * (2.0 * m.kv_lora_rank + m.qk_rope_head_dim) * 2.0;
    dcp_bytes_token_ = n_mla_layers_ * per_layer * double(opt.dcp - 1) / opt.dcp;
    dcp_calls_ = 2.0 * n_mla_layers_;
  }
  const double stored_bits = model.weight(WeightKind::RoutedExpert).bits;
  expert_bits_ = opt.expert_compute_bits;
  if (expert_bits_ == 0) {  // run at the storage precision where the tensor cores exist
    expert_bits_ = stored_bits >= 16 ? 16 : stored_bits > 8 ? 16 : stored_bits > 4.5 ? 8 : 4;
    if (expert_bits_ == 4 && hw.fp4_flops <= 0) expert_bits_ = 8;
  }
  mem_bw_ = hw.hbm_bw_bytes_s * hw.memory_efficiency;
  gemm_peak_ = hw.peak_flops(16) * hw.gemm_efficiency;
  expert_peak_ = hw.peak_flops(expert_bits_) * hw.gemm_efficiency;
  attn_peak_ = hw.peak_flops(opt.kv_dtype_bytes == 1 ? 8 : 16) * hw.attention_efficiency;
  kda_peak_ = hw.peak_flops(16) * hw.attention_efficiency;
  link_bw_ = hw.nvlink_bw_bytes_s * hw.comm_efficiency;
  host_bw_ = hw.host_link_bw_bytes_s * hw.host_link_efficiency;
  comm_latency_s_ = hw.comm_latency_s;
  overhead_s_ = opt.step_overhead_s >= 0 ? opt.step_overhead_s : hw.step_overhead_s;
  DS_CHECK(std::isfinite(overhead_s_) && overhead_s_ < 10, "step overhead must be in [0, 10) s, got {}",
           overhead_s_);
}

double CostModel::distinct_experts(int64_t n_tokens) const {
  if (n_tokens <= 0 || n_expert_ <= 0) return 0;
  return n_expert_ * (1.0 - std::pow(1.0 - top_k_ / n_expert_, double(n_tokens)));
}

// Roofline of one step; with spec_expand, every decode sequence computes k + 1 tokens (verify).
StepCost CostModel::raw_step(const StepWork& work, bool spec_expand) const {
  StepCost cost;
  double n_tok = 0, n_seq = 0, n_dec_tok = 0, host_bytes = 0, copies = 0;
  double attn_flops = 0, attn_bytes = 0, kda_flops = 0, kda_bytes = 0, gather_bytes = 0;
  const double dcp = opt_.dcp;
  const int64_t verify = spec_expand ? opt_.spec.draft_tokens + 1 : 1;
  for (const SeqWork& s : work.seqs) {
    DS_CHECK(s.n_new_tokens >= 0 && s.n_context_tokens >= 0 && s.n_checkpoints >= 0 && s.n_restores >= 0 &&
                 s.host_load_bytes >= 0,
             "negative work in a step: new {} context {} checkpoints {} restores {} host bytes {}",
             s.n_new_tokens, s.n_context_tokens, s.n_checkpoints, s.n_restores, s.host_load_bytes);
    host_bytes += double(s.host_load_bytes);
    copies += double(s.n_checkpoints + s.n_restores);
    if (s.n_new_tokens == 0) continue;
    const bool decode = s.n_new_tokens == 1;
    const double n = decode ? double(verify) : double(s.n_new_tokens), ctx = double(s.n_context_tokens);
    n_tok += n;
    n_seq += 1;
    // Same formulas as ModelProfile::mla_attention_flops / kda_flops, with per-GPU coefficients.
    // Under DCP a GPU holds 1/dcp of the context's latent and attends all its group's heads over it:
    // the same FLOPs per GPU, 1/dcp of the bytes.
    const double keys = n * ctx + n * (n + 1) / 2;
    if (decode) {
      attn_flops += mla_key_decode_ * keys;
      n_dec_tok += n;
    } else {
      attn_flops += mla_key_prefill_ * keys + mla_expand_ * ctx;
      gather_bytes += ctx * kv_bytes_token_ * (dcp - 1) / dcp;  // prefill needs the whole context
    }
    attn_bytes += (ctx + n) * kv_bytes_token_ / dcp;  // read the context, write the new tokens
    kda_flops += (decode && verify == 1 ? kda_token_decode_ : kda_token_prefill_) * n;
    kda_bytes += 2.0 * state_bytes_gpu_;  // read the live state, write it back
  }
  if (n_tok > 0) {
    const double weight_bytes =
        dense_bytes_gpu_ + n_moe_layers_ * distinct_experts(int64_t(n_tok)) * expert_bytes_gpu_;
    const double dense_flops = n_tok * dense_flops_token_ + n_seq * lm_head_flops_ * double(verify);
    const double routed_flops = n_tok * routed_flops_token_;
    cost.weights_s = weight_bytes / mem_bw_;
    cost.gemm_s = dense_flops / gemm_peak_ + routed_flops / expert_peak_;
    cost.attn_s = std::max(attn_flops / attn_peak_, attn_bytes / mem_bw_);
    cost.kda_s = std::max(kda_flops / kda_peak_, kda_bytes / mem_bw_);
    cost.comm_s = (n_tok * allreduce_bytes_token_ + n_dec_tok * dcp_bytes_token_ + gather_bytes) / link_bw_ +
                  (allreduce_calls_ + (n_dec_tok > 0 ? dcp_calls_ : 0.0)) * comm_latency_s_;
    cost.flops = (dense_flops + routed_flops + attn_flops + kda_flops) * opt_.tp;
    cost.bytes = (weight_bytes + attn_bytes + kda_bytes) * opt_.tp;
  }
  const double copy_bytes = copies * 2.0 * state_bytes_gpu_;  // device-to-device: read + write
  cost.checkpoint_s = copy_bytes / mem_bw_;
  cost.transfer_s = host_bytes / host_bw_;
  cost.bytes += copy_bytes * opt_.tp;
  if (!work.seqs.empty()) cost.overhead_s = overhead_s_;
  cost.total_s = std::max(cost.weights_s, cost.gemm_s) + cost.attn_s + cost.kda_s + cost.checkpoint_s +
                 cost.comm_s + cost.transfer_s + cost.overhead_s;
  return cost;
}

StepCost CostModel::step(const StepWork& work) const {
  StepCost full = raw_step(work, opt_.spec.enabled());
  if (!opt_.spec.enabled()) return full;
  // The decode sequences' marginal work (the full step minus the step without their tokens) is a
  // verify step that commits acceptance_length tokens: charge it per committed token. The rest
  // (prefill chunks, copies, transfers, and the step overhead when prefill shares the step) is
  // charged in full; a decode-only step is amortised whole, overhead included.
  StepWork rest;
  bool any_decode = false;
  for (const SeqWork& s : work.seqs) {
    if (s.n_new_tokens != 1) {
      rest.seqs.push_back(s);
      continue;
    }
    any_decode = true;
    if (s.n_checkpoints + s.n_restores + s.host_load_bytes > 0)
      rest.seqs.push_back(SeqWork{0, s.n_context_tokens, s.n_checkpoints, s.n_restores, s.host_load_bytes});
  }
  if (!any_decode) return full;
  const StepCost r = raw_step(rest, false);
  const double scale = (1.0 + opt_.spec.draft_cost_fraction) / opt_.spec.acceptance_length;
  auto mix = [&](double f, double b) { return b + (f - b) * scale; };
  StepCost c;
  c.total_s = mix(full.total_s, r.total_s);
  c.weights_s = mix(full.weights_s, r.weights_s);
  c.attn_s = mix(full.attn_s, r.attn_s);
  c.kda_s = mix(full.kda_s, r.kda_s);
  c.gemm_s = mix(full.gemm_s, r.gemm_s);
  c.comm_s = mix(full.comm_s, r.comm_s);
  c.overhead_s = mix(full.overhead_s, r.overhead_s);
  c.transfer_s = mix(full.transfer_s, r.transfer_s);
  c.checkpoint_s = mix(full.checkpoint_s, r.checkpoint_s);
  c.flops = mix(full.flops, r.flops);
  c.bytes = mix(full.bytes, r.bytes);
  return c;
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
