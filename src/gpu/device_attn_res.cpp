#include "gpu/device_attn_res.h"

#include <algorithm>

#include "kernels/attn_res.h"
#include "kernels/elementwise.h"

namespace ds {

DeviceAttnRes::DeviceAttnRes(const ForwardContext& ctx, AttnResMode mode)
    : ctx_(ctx),
      mode_(mode),
      T_(ctx.T),
      D_(ctx.cfg.hidden),
      block_size_(ctx.cfg.attn_res_block_size),
      n_layer_(ctx.cfg.n_layer) {}

TensorView DeviceAttnRes::query_attn(int layer) const {
  return TensorView::contiguous(static_cast<float*>(ctx_.w.res_attn.data) + int64_t(layer) * D_, DType::F32,
                                {D_}, ctx_.device);
}
TensorView DeviceAttnRes::query_mlp(int layer) const {
  return TensorView::contiguous(static_cast<float*>(ctx_.w.res_mlp.data) + int64_t(layer) * D_, DType::F32,
                                {D_}, ctx_.device);
}
TensorView DeviceAttnRes::query_out() const {
  return ctx_.w.res_out;
}

void DeviceAttnRes::start(const DevMat& embeddings) {
  partial_ = ctx_.mat(T_, D_);
  cast_rows(embeddings.view(), partial_.view());
  has_partial_ = true;
}

void DeviceAttnRes::commit(int layer) {
  blocks_.push_back(std::move(partial_));
  partial_ = ctx_.mat(T_, D_);
  has_partial_ = false;
  block_start_ = layer;
  if (mode_ != AttnResMode::TwoPhase) return;
  // Phase 1 for every sublayer query until the next commit (and the output mixer after the last).
  const int end = std::min(layer + block_size_, n_layer_);
  std::vector<TensorView> q;
  for (int l = layer; l < end; ++l) q.push_back(query_attn(l)), q.push_back(query_mlp(l));
  if (end == n_layer_) q.push_back(query_out());
  const int64_t Q = int64_t(q.size());
  queries_ = ctx_.mat(Q, D_);
  for (int64_t j = 0; j < Q; ++j)
    copy_bytes(queries_.data() + j * D_, ctx_.device, q[size_t(j)].data, ctx_.device,
               D_ * int64_t(sizeof(float)));
  m_ = ctx_.mat(Q, T_), s_ = ctx_.mat(Q, T_), o_ = ctx_.mat(Q, T_ * D_);
  std::vector<TensorView> blocks;
  for (const DevMat& b : blocks_) blocks.push_back(b.flat());
  attn_res_block_scores(blocks, queries_.view(), ctx_.cfg.rms_norm_eps, m_.view(), s_.view(), o_.flat());
}

void DeviceAttnRes::mix(const TensorView& query, int query_index, bool with_partial, const DevMat& h) const {
  if (mode_ == AttnResMode::TwoPhase) {
    const TensorView none = TensorView::contiguous(nullptr, DType::F32, {T_ * D_}, ctx_.device);
    attn_res_merge(query_index, m_.view(), s_.view(), o_.flat(), with_partial ? partial_.flat() : none,
                   TensorView::contiguous(queries_.data() + query_index * D_, DType::F32, {D_}, ctx_.device),
                   ctx_.cfg.rms_norm_eps, h.view());
    return;
  }
  std::vector<TensorView> sources;
  for (const DevMat& b : blocks_) sources.push_back(b.flat());
  if (with_partial) sources.push_back(partial_.flat());
  attn_res_mix(sources, query, ctx_.cfg.rms_norm_eps, h.view());
}

void DeviceAttnRes::attn_input(int layer, const DevMat& h) {
  const bool block_start = layer % block_size_ == 0;
  if (mode_ == AttnResMode::Reference) {
    // HF order: mix [B..., P_in] first (P_in alone at layer 0), then commit P_in.
    if (blocks_.empty())
      cast_rows(partial_.view(), h.view());
    else
      mix(query_attn(layer), 0, true, h);
    if (block_start) commit(layer);
  } else if (block_start) {
    commit(layer);  // two-phase: the just-committed block takes the place of P_in
    mix(query_attn(layer), 0, false, h);
  } else {
    mix(query_attn(layer), 2 * (layer - block_start_), true, h);
  }
}

void DeviceAttnRes::add_attn_output(int layer, const DevMat& a) {
  if (has_partial_)
    add_rows(a.view(), partial_.view());
  else
    cast_rows(a.view(), partial_.view());
  has_partial_ = true;
}

void DeviceAttnRes::mlp_input(int layer, const DevMat& h) {
  mix(query_mlp(layer), 2 * (layer - block_start_) + 1, true, h);
}

void DeviceAttnRes::add_mlp_output(const DevMat& m) {
  add_rows(m.view(), partial_.view());
}

void DeviceAttnRes::final_output(const DevMat& h) {
  mix(query_out(), 2 * (n_layer_ - block_start_), true, h);
}

}  // namespace ds
