// Internal to src/gpu: K3 Block Attention Residuals on the device, the call protocol and commit
// schedule of layers/attn_res.h's AttnResStream (which stays the CPU reference) over device
// matrices and the kernels/attn_res.h mixing kernels, in the reference or the two-phase form.
#pragma once

#include <vector>

#include "gpu/forward_context.h"
#include "layers/attn_res.h"

namespace ds {

class DeviceAttnRes {
 public:
  DeviceAttnRes(const ForwardContext& ctx, AttnResMode mode);

  void start(const DevMat& embeddings);              // P <- token embeddings [T, D]
  void attn_input(int layer, const DevMat& h);       // h: input of input_layernorm
  void add_attn_output(int layer, const DevMat& a);  // P <- P + a (P <- a right after a commit)
  void mlp_input(int layer, const DevMat& h);        // h: input of post_attention_layernorm
  void add_mlp_output(const DevMat& m);              // P <- P + m
  void final_output(const DevMat& h);                // h: input of the final norm
  const DevMat& partial() const { return partial_; }

 private:
  void commit(int layer);
  TensorView query_attn(int layer) const;
  TensorView query_mlp(int layer) const;
  TensorView query_out() const;
  void mix(const TensorView& query, int query_index, bool with_partial, const DevMat& h) const;

  const ForwardContext& ctx_;
  AttnResMode mode_;
  int64_t T_, D_;
  int block_size_, n_layer_;
  int block_start_ = 0;
  bool has_partial_ = false;
  std::vector<DevMat> blocks_;
  DevMat partial_;
  DevMat queries_, m_, s_, o_;  // two-phase: the block's queries [Q, D], m, s [Q, T], o [Q, T*D]
};

}  // namespace ds
