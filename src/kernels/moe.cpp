#include "kernels/moe.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/dtype.h"
#include "kernels/activation.h"
#include "kernels/dispatch.h"
#include "kernels/expert_glu_ref.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/moe_launch.h"
#endif

namespace ds {
namespace {

template <class T>
T* ptr(const TensorView& v) {
  return static_cast<T*>(v.data);
}

// ---- CPU implementations (plain loops; the references of the CUDA kernels) ----------------------

void cpu_route(const MoeRouteArgs& a, int64_t T, int64_t E) {
  const float* logits = ptr<const float>(a.logits);
  const float* bias = ptr<const float>(a.bias);
  std::vector<float> score(static_cast<size_t>(E)), sel(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) {
      score[size_t(e)] = sigmoidf(logits[t * E + e]);
      sel[size_t(e)] = score[size_t(e)] + (bias ? bias[e] : 0.0f);
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + a.k, order.end(), [&](int32_t x, int32_t y) {
      return sel[size_t(x)] > sel[size_t(y)] || (sel[size_t(x)] == sel[size_t(y)] && x < y);
    });
    float sum = 0.0f;
    for (int j = 0; j < a.k; ++j) sum += score[size_t(order[size_t(j)])];
    const float norm = a.renormalize && a.k > 1 ? 1.0f / (sum + 1e-20f) : 1.0f;
    for (int j = 0; j < a.k; ++j) {
      ptr<int32_t>(a.expert)[t * a.k + j] = order[size_t(j)];
      ptr<float>(a.weight)[t * a.k + j] = score[size_t(order[size_t(j)])] * norm * a.scaling;
    }
  }
}

void cpu_group(const TensorView& expert, int64_t E, const MoeGroups& g) {
  const int64_t n = expert.numel();
  const int32_t* ex = ptr<const int32_t>(expert);
  int32_t* off = ptr<int32_t>(g.offsets);
  int32_t* active = ptr<int32_t>(g.active);
  std::fill(off, off + E + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++off[ex[i] + 1];
  int32_t n_active = 0;
  for (int64_t e = 0; e < E; ++e) {
    if (off[e + 1] > 0) active[1 + n_active++] = int32_t(e);
    off[e + 1] += off[e];
  }
  active[0] = n_active;
  std::vector<int32_t> fill(off, off + E);
  const int64_t k = expert.shape[1];
  for (int64_t i = 0; i < n; ++i) {
    const int32_t row = fill[size_t(ex[i])]++;
    ptr<int32_t>(g.row_token)[row] = int32_t(i / k);
    ptr<int32_t>(g.pos)[i] = row;
  }
}

void cpu_grouped_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h,
                     const TensorView& y) {
  const int32_t* off = ptr<const int32_t>(g.offsets);
  const int32_t* active = ptr<const int32_t>(g.active);
  const int32_t* tok = ptr<const int32_t>(g.row_token);
  const int64_t D = w.D, I = w.I;
  for (int32_t a = 0; a < active[0]; ++a) {
    const int32_t e = active[1 + a];
    const ExpertMatrix gate = expert_matrix(w, 0, e), up = expert_matrix(w, 1, e),
                       down = expert_matrix(w, 2, e);
    for (int32_t row = off[e]; row < off[e + 1]; ++row) {
      const float* xr = ptr<const float>(x) + tok[row] * x.stride[0];
      expert_glu_row(gate, up, down, w.act, xr, D, I, ptr<float>(h) + row * h.stride[0],
                     ptr<float>(y) + row * y.stride[0]);
    }
  }
}

}  // namespace

void moe_route(const MoeRouteArgs& a) {
  const int64_t T = a.logits.ndim == 2 ? a.logits.shape[0] : -1;
  const int64_t E = a.logits.ndim == 2 ? a.logits.shape[1] : -1;
  DS_CHECK(T >= 0 && E >= 1 && a.k >= 1 && a.k <= E, "moe_route: logits must be [T, E] with 1 <= k ({}) <= E",
           a.k);
  detail::check_flat("moe_route", "logits", a.logits, T * E);
  if (a.bias.data) detail::check_flat("moe_route", "bias", a.bias, E);
  detail::check_flat("moe_route", "expert", a.expert, T * a.k, DType::I32);
  detail::check_flat("moe_route", "weight", a.weight, T * a.k);
  check_same_device("moe_route", a.logits.device, {&a.expert, &a.weight});
  if (a.bias.data) check_same_device("moe_route", a.logits.device, {&a.bias});
  if (T == 0) return;
  if (a.logits.device == Device::Cpu) return cpu_route(a, T, E);
#ifdef DS_HAVE_CUDA
  return cuda::launch_moe_route(ptr<const float>(a.logits), ptr<const float>(a.bias), T, E, a.k,
                                a.renormalize, a.scaling, ptr<int32_t>(a.expert), ptr<float>(a.weight));
#endif
  detail::no_backend("moe_route", a.logits.device);
}

void moe_group(const TensorView& expert, int64_t E, const MoeGroups& g) {
  DS_CHECK(expert.ndim == 2 && E >= 1, "moe_group: expert must be [T, k], E >= 1");
  const int64_t n = expert.numel();
  detail::check_flat("moe_group", "expert", expert, n, DType::I32);
  detail::check_flat("moe_group", "offsets", g.offsets, E + 1, DType::I32);
  detail::check_flat("moe_group", "active", g.active, E + 1, DType::I32);
  detail::check_flat("moe_group", "row_token", g.row_token, n, DType::I32);
  detail::check_flat("moe_group", "pos", g.pos, n, DType::I32);
  check_same_device("moe_group", expert.device, {&g.offsets, &g.active, &g.row_token, &g.pos});
  if (expert.device == Device::Cpu) {
    for (int64_t i = 0; i < n; ++i)
      DS_CHECK(ptr<const int32_t>(expert)[i] >= 0 && ptr<const int32_t>(expert)[i] < E,
               "moe_group: expert {} = {} not in [0, {})", i, ptr<const int32_t>(expert)[i], E);
    return cpu_group(expert, E, g);
  }
#ifdef DS_HAVE_CUDA
  return cuda::launch_moe_group(ptr<const int32_t>(expert), n, expert.shape[1], E, ptr<int32_t>(g.offsets),
                                ptr<int32_t>(g.active), ptr<int32_t>(g.row_token), ptr<int32_t>(g.pos));
#endif
  detail::no_backend("moe_group", expert.device);
}

void moe_grouped_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h,
                     const TensorView& y) {
  const int64_t n = g.row_token.numel();
  DS_CHECK(w.ptrs && w.E >= 1 && w.D % 8 == 0 && w.I % 8 == 0 &&
               (w.dtype == DType::BF16 || w.dtype == DType::F32) && !w.act.situ,
           "moe_grouped_glu: experts must be F32/BF16 SiLU-GLUs with D ({}) and I ({}) multiples of 8", w.D,
           w.I);
  detail::check_rows("moe_grouped_glu", "x", x, x.ndim == 2 ? x.shape[0] : -1, w.D);
  detail::check_rows("moe_grouped_glu", "h", h, n, w.I);
  detail::check_rows("moe_grouped_glu", "y", y, n, w.D);
  check_same_device("moe_grouped_glu", w.device, {&x, &h, &y, &g.offsets, &g.active, &g.row_token});
  if (n == 0) return;
  if (w.device == Device::Cpu) return cpu_grouped_glu(x, w, g, h, y);
#ifdef DS_HAVE_CUDA
  cuda::GroupedGluLaunch l;
  l.x = ptr<const float>(x), l.x_stride = x.stride[0];
  l.ptrs = w.ptrs, l.bf16 = w.dtype == DType::BF16, l.E = w.E, l.I = w.I, l.D = w.D;
  l.offsets = ptr<const int32_t>(g.offsets), l.active = ptr<const int32_t>(g.active);
  l.row_token = ptr<const int32_t>(g.row_token), l.n_rows = n;
  l.h = ptr<float>(h), l.h_stride = h.stride[0], l.y = ptr<float>(y), l.y_stride = y.stride[0];
  return cuda::launch_moe_grouped_glu(l);
#endif
  detail::no_backend("moe_grouped_glu", w.device);
}

}  // namespace ds
