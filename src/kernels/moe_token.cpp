#include "kernels/moe_token.h"

#include <vector>

#include "core/dtype.h"
#include "kernels/dispatch.h"
#include "kernels/expert_glu_ref.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/moe_token_launch.h"
#endif

namespace ds {
namespace {

ExpertMatrix shared_matrix(const WeightView& m) {
  return {m.data, nullptr, m.dtype, m.cols};
}

// Plain loops: the reference of the CUDA kernels.
void cpu_token_glu(const MoeTokenGluArgs& a, int64_t T, int64_t k, bool shared) {
  const GroupedExperts& w = a.experts;
  const int64_t D = w.D, I = w.I, ks = k + (shared ? 1 : 0);
  const auto* ex = static_cast<const int32_t*>(a.expert.data);
  const auto* wt = static_cast<const float*>(a.weight.data);
  std::vector<float> sum(static_cast<size_t>(D)), out(static_cast<size_t>(D));  // f32 [D]
  for (int64_t t = 0; t < T; ++t) {
    const float* x = static_cast<const float*>(a.x.data) + t * a.x.stride[0];
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t j = 0; j < ks; ++j) {
      const bool routed = j < k;
      const int64_t e = routed ? ex[t * k + j] : 0;
      const ExpertMatrix gate = routed ? expert_matrix(w, 0, e) : shared_matrix(a.shared_gate);
      const ExpertMatrix up = routed ? expert_matrix(w, 1, e) : shared_matrix(a.shared_up);
      const ExpertMatrix down = routed ? expert_matrix(w, 2, e) : shared_matrix(a.shared_down);
      float* h = static_cast<float*>(a.h.data) + (t * ks + j) * a.h.stride[0];
      expert_glu_row(gate, up, down, w.act, x, D, I, h, out.data());
      const float m = routed ? wt[t * k + j] : 1.0f;
      for (int64_t d = 0; d < D; ++d) sum[size_t(d)] += m * out[size_t(d)];
    }
    float* y = static_cast<float*>(a.y.data) + t * a.y.stride[0];
    for (int64_t d = 0; d < D; ++d) y[d] = a.accumulate ? y[d] + sum[size_t(d)] : sum[size_t(d)];
  }
}

}  // namespace

void moe_token_glu(const MoeTokenGluArgs& a) {
  const GroupedExperts& w = a.experts;
  DS_CHECK(a.expert.ndim == 2 && a.expert.dtype == DType::I32, "moe_token_glu: expert must be I32 [T, k]");
  const int64_t T = a.expert.shape[0], k = a.expert.shape[1];
  const bool shared = a.shared_gate.data != nullptr;
  const int64_t mult = w.mxfp4() ? 32 : 8;  // an MXFP4 row is whole 32-input scale blocks
  DS_CHECK(
      w.ptrs && w.E >= 1 && w.D % mult == 0 && w.I % mult == 0 &&
          (w.dtype == DType::BF16 || w.dtype == DType::F32 || (w.mxfp4() && w.scales)),
      "moe_token_glu: experts must be F32/BF16 (D, I multiples of 8) or MXFP4 (multiples of 32); D {}, I {}",
      w.D, w.I);
  DS_CHECK(!shared || (!w.mxfp4() && a.shared_gate.dtype == w.dtype && a.shared_up.dtype == w.dtype &&
                       a.shared_down.dtype == w.dtype && a.shared_gate.rows == w.I &&
                       a.shared_gate.cols == w.D && a.shared_up.rows == w.I && a.shared_up.cols == w.D &&
                       a.shared_down.rows == w.D && a.shared_down.cols == w.I && a.shared_up.data &&
                       a.shared_down.data && a.shared_gate.device == w.device &&
                       a.shared_up.device == w.device && a.shared_down.device == w.device),
           "moe_token_glu: the shared expert must have the routed experts' dtype and shapes ([{}, {}])", w.I,
           w.D);
  detail::check_flat("moe_token_glu", "expert", a.expert, T * k, DType::I32);
  detail::check_flat("moe_token_glu", "weight", a.weight, T * k);
  detail::check_rows("moe_token_glu", "x", a.x, T, w.D);
  detail::check_rows("moe_token_glu", "h", a.h, T * (k + (shared ? 1 : 0)), w.I);
  detail::check_rows("moe_token_glu", "y", a.y, T, w.D);
  check_same_device("moe_token_glu", w.device, {&a.x, &a.expert, &a.weight, &a.h, &a.y});
  if (T == 0) return;
  if (w.device == Device::Cpu) return cpu_token_glu(a, T, k, shared);
#ifdef DS_HAVE_CUDA
  cuda::TokenGluLaunch l;
  l.x = static_cast<const float*>(a.x.data), l.x_stride = a.x.stride[0];
  l.expert = static_cast<const int32_t*>(a.expert.data), l.weight = static_cast<const float*>(a.weight.data);
  l.T = T, l.k = k, l.ptrs = w.ptrs, l.E = w.E, l.I = w.I, l.D = w.D;
  l.shared_gate = shared ? a.shared_gate.data : nullptr;
  l.shared_up = shared ? a.shared_up.data : nullptr;
  l.shared_down = shared ? a.shared_down.data : nullptr;
  l.bf16 = w.dtype == DType::BF16;
  l.scales = w.mxfp4() ? w.scales : nullptr;
  l.situ = w.act.situ, l.beta = w.act.beta, l.linear_beta = w.act.linear_beta;
  l.h = static_cast<float*>(a.h.data), l.h_stride = a.h.stride[0];
  l.y = static_cast<float*>(a.y.data), l.y_stride = a.y.stride[0], l.accumulate = a.accumulate;
  return w.mxfp4() ? cuda::launch_moe_token_glu_mxfp4(l) : cuda::launch_moe_token_glu(l);
#endif
  detail::no_backend("moe_token_glu", w.device);
}

}  // namespace ds
