#include "kernels/moe_gemm.h"

#include <vector>

#include "core/dtype.h"
#include "core/mxfp4.h"
#include "kernels/dispatch.h"
#include "kernels/expert_glu_ref.h"
#include "kernels/memory.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/moe_gemm_launch.h"
#endif

namespace ds {
namespace {

void check_bf16_rows(const char* op, const char* what, const TensorView& v, int64_t rows, int64_t cols) {
  DS_CHECK(v.dtype == DType::BF16, "{}: {} is {}, bf16 required", op, what, dtype_name(v.dtype));
  TensorView as_f32 = v;
  as_f32.dtype = DType::F32;
  detail::check_rows(op, what, as_f32, rows, cols);
}

void check_common(const char* op, const GroupedExperts& w, const MoeGroups& g) {
  DS_CHECK(moe_gemm_supported(w),
           "{}: experts must be BF16 (D, I multiples of 8) or MXFP4 (multiples of 32); D {}, I {}", op, w.D,
           w.I);
  detail::check_flat(op, "offsets", g.offsets, w.E + 1, DType::I32);
  detail::check_flat(op, "row_token", g.row_token, g.row_token.numel(), DType::I32);
}

const uint16_t* bf16_ptr(const TensorView& v) {
  return static_cast<const uint16_t*>(v.data);
}

// ---- CPU references: plain loops over each expert's rows, f32 sums of products of bf16 inputs and
// bf16 or (decoded) MXFP4 weights ------------------------------------------------------------------

// Σ_c a[c] · W[n, c]; a bf16 [K].
float dot_row(const uint16_t* a, const ExpertMatrix& w, int64_t n, int64_t K) {
  float s = 0.0f;
  for (int64_t c = 0; c < K; ++c) s += bf16_to_f32(a[c]) * w.at(n, c);
  return s;
}

void cpu_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h) {
  const auto* off = static_cast<const int32_t*>(g.offsets.data);
  const auto* tok = static_cast<const int32_t*>(g.row_token.data);
  for (int64_t e = 0; e < w.E; ++e) {
    const ExpertMatrix gate = expert_matrix(w, 0, e), up = expert_matrix(w, 1, e);
    for (int32_t r = off[e]; r < off[e + 1]; ++r) {
      const uint16_t* xr = bf16_ptr(x) + int64_t(tok[r]) * x.stride[0];
      uint16_t* hr = static_cast<uint16_t*>(h.data) + int64_t(r) * h.stride[0];
      for (int64_t i = 0; i < w.I; ++i)
        hr[i] = f32_to_bf16(expert_act(w.act, dot_row(xr, gate, i, w.D), dot_row(xr, up, i, w.D)));
    }
  }
}

void cpu_down(const TensorView& h, const GroupedExperts& w, const MoeGroups& g, const TensorView& y) {
  const auto* off = static_cast<const int32_t*>(g.offsets.data);
  for (int64_t e = 0; e < w.E; ++e) {
    const ExpertMatrix down = expert_matrix(w, 2, e);
    for (int32_t r = off[e]; r < off[e + 1]; ++r) {
      const uint16_t* hr = bf16_ptr(h) + int64_t(r) * h.stride[0];
      float* yr = static_cast<float*>(y.data) + int64_t(r) * y.stride[0];
      for (int64_t d = 0; d < w.D; ++d) yr[d] = dot_row(hr, down, d, w.I);
    }
  }
}

#ifdef DS_HAVE_CUDA
void launch(const TensorView& a, const int32_t* a_rows, const GroupedExperts& w, const MoeGroups& g, bool glu,
            const TensorView& out, MoeGemmKernel kernel) {
  cuda::MoeGemmLaunch l;
  const int64_t n = g.row_token.numel();
  const Buffer tiles(w.device, (1 + 2 * cuda::moe_gemm_max_tiles(n, w.E)) * 4);
  l.a = bf16_ptr(a), l.lda = a.stride[0], l.a_rows = a_rows;
  l.ptrs = w.ptrs, l.b_first = glu ? 0 : 2, l.E = w.E;
  // The CUDA kernels decode the codes low nibble first (kernels/cuda/mxfp4.cuh).
  static_assert(kMxfp4NibbleOrder == NibbleOrder::LowFirst);
  l.scales = w.mxfp4() ? w.scales : nullptr;
  l.situ = w.act.situ, l.beta = w.act.beta, l.linear_beta = w.act.linear_beta;
  l.N = glu ? w.I : w.D, l.K = glu ? w.D : w.I, l.glu = glu;
  l.offsets = static_cast<const int32_t*>(g.offsets.data), l.n_rows = n;
  l.tiles = tiles.as<int32_t>(), l.out = out.data, l.ldo = out.stride[0];
  l.wgmma = kernel == MoeGemmKernel::Auto;
  cuda::launch_moe_gemm(l);
}
#endif

}  // namespace

bool moe_gemm_supported(const GroupedExperts& w) {
  if (w.ptrs == nullptr || w.E < 1) return false;
  if (w.mxfp4()) return w.scales != nullptr && w.D % 32 == 0 && w.I % 32 == 0;
  return w.dtype == DType::BF16 && w.D % 8 == 0 && w.I % 8 == 0;
}

void moe_gemm_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h,
                  MoeGemmKernel kernel) {
  check_common("moe_gemm_glu", w, g);
  const int64_t n = g.row_token.numel();
  check_bf16_rows("moe_gemm_glu", "x", x, x.ndim == 2 ? x.shape[0] : -1, w.D);
  check_bf16_rows("moe_gemm_glu", "h", h, n, w.I);
  check_same_device("moe_gemm_glu", w.device, {&x, &h, &g.offsets, &g.row_token});
  if (n == 0) return;
  if (w.device == Device::Cpu) return cpu_glu(x, w, g, h);
#ifdef DS_HAVE_CUDA
  return launch(x, static_cast<const int32_t*>(g.row_token.data), w, g, true, h, kernel);
#endif
  detail::no_backend("moe_gemm_glu", w.device);
}

void moe_gemm_down(const TensorView& h, const GroupedExperts& w, const MoeGroups& g, const TensorView& y,
                   MoeGemmKernel kernel) {
  check_common("moe_gemm_down", w, g);
  const int64_t n = g.row_token.numel();
  check_bf16_rows("moe_gemm_down", "h", h, n, w.I);
  detail::check_rows("moe_gemm_down", "y", y, n, w.D);
  check_same_device("moe_gemm_down", w.device, {&h, &y, &g.offsets});
  if (n == 0) return;
  if (w.device == Device::Cpu) return cpu_down(h, w, g, y);
#ifdef DS_HAVE_CUDA
  return launch(h, nullptr, w, g, false, y, kernel);
#endif
  detail::no_backend("moe_gemm_down", w.device);
}

}  // namespace ds
