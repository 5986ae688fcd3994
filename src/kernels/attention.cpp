#include "kernels/attention.h"

#include "kernels/cpu/attention.h"
#include "kernels/dispatch.h"

namespace ds {

void attention_causal(const AttnDims& d, const TensorView& q, const TensorView& k, const TensorView& v,
                      float scale, const TensorView& o) {
  detail::check_rows("attention_causal", "q", q, d.n_q, d.H * d.Dk);
  detail::check_rows("attention_causal", "k", k, d.n_kv, d.H * d.Dk);
  detail::check_rows("attention_causal", "v", v, d.n_kv, d.H * d.Dv);
  detail::check_rows("attention_causal", "o", o, d.n_q, d.H * d.Dv);
  check_same_device("attention_causal", q.device, {&k, &v, &o});
  if (q.device != Device::Cpu) detail::no_backend("attention_causal", q.device);
  cpu::attention_causal(d, static_cast<const float*>(q.data), q.stride[0], static_cast<const float*>(k.data),
                        k.stride[0], static_cast<const float*>(v.data), v.stride[0], scale,
                        static_cast<float*>(o.data), o.stride[0]);
}

void latent_attention(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b,
                      float scale) {
  cpu::latent_attention(s, seqs, w_kv_b, scale);
}

}  // namespace ds
