#include "kernels/attn_res.h"

#include <vector>

#include "kernels/cpu/attn_res.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {
namespace {

// Contiguous f32 [T, D] views on `device`; returns their data pointers.
std::vector<const float*> check_sources(const char* op, std::span<const TensorView> src, int64_t T, int64_t D,
                                        Device device) {
  DS_CHECK(!src.empty() && src.size() <= size_t(kAttnResMaxSources), "{}: {} sources (1..{})", op, src.size(),
           kAttnResMaxSources);
  std::vector<const float*> p;
  for (const TensorView& v : src) {
    detail::check_flat(op, "source", v, T * D);
    check_same_device(op, device, {&v});
    p.push_back(static_cast<const float*>(v.data));
  }
  return p;
}

#ifdef DS_HAVE_CUDA
cuda::AttnResSources launch_sources(const std::vector<const float*>& p) {
  cuda::AttnResSources s{};
  s.n = int(p.size());
  for (size_t i = 0; i < p.size(); ++i) s.ptr[i] = p[i];
  return s;
}
#endif

int64_t rows_of(const TensorView& v) {
  return v.ndim == 2 ? v.shape[0] : -1;
}
int64_t cols_of(const TensorView& v) {
  return v.ndim == 2 ? v.shape[1] : -1;
}

}  // namespace

void attn_res_mix(std::span<const TensorView> sources, const TensorView& query, float eps,
                  const TensorView& out) {
  const char* op = "attn_res_mix";
  const int64_t T = rows_of(out), D = cols_of(out);
  detail::check_flat(op, "out", out, T * D);
  detail::check_flat(op, "query", query, D);
  const std::vector<const float*> p = check_sources(op, sources, T, D, out.device);
  check_same_device(op, out.device, {&query});
  for (const float* s : p) DS_CHECK(s != out.data, "{}: out aliases a source", op);
  if (T == 0) return;
  if (out.device == Device::Cpu)
    return cpu::attn_res_mix(p, T, D, static_cast<const float*>(query.data), eps,
                             static_cast<float*>(out.data));
#ifdef DS_HAVE_CUDA
  return cuda::launch_attn_res_mix(launch_sources(p), T, D, static_cast<const float*>(query.data), eps,
                                   static_cast<float*>(out.data));
#endif
  detail::no_backend(op, out.device);
}

void attn_res_block_scores(std::span<const TensorView> blocks, const TensorView& queries, float eps,
                           const TensorView& m, const TensorView& s, const TensorView& o) {
  const char* op = "attn_res_block_scores";
  const int64_t Q = rows_of(queries), D = cols_of(queries), T = cols_of(m);
  detail::check_flat(op, "queries", queries, Q * D);
  detail::check_flat(op, "m", m, Q * T);
  detail::check_flat(op, "s", s, Q * T);
  detail::check_flat(op, "o", o, Q * T * D);
  const std::vector<const float*> p = check_sources(op, blocks, T, D, m.device);
  check_same_device(op, m.device, {&queries, &s, &o});
  if (T == 0) return;
  const float* q = static_cast<const float*>(queries.data);
  float *mp = static_cast<float*>(m.data), *sp = static_cast<float*>(s.data),
        *op_ = static_cast<float*>(o.data);
  if (m.device == Device::Cpu) return cpu::attn_res_block_scores(p, T, D, q, Q, eps, mp, sp, op_);
#ifdef DS_HAVE_CUDA
  return cuda::launch_attn_res_block_scores(launch_sources(p), T, D, q, Q, eps, mp, sp, op_);
#endif
  detail::no_backend(op, m.device);
}

void attn_res_merge(int64_t j, const TensorView& m, const TensorView& s, const TensorView& o,
                    const TensorView& partial, const TensorView& query, float eps, const TensorView& out) {
  const char* op = "attn_res_merge";
  const int64_t Q = rows_of(m), T = cols_of(m), D = cols_of(out);
  DS_CHECK(j >= 0 && j < Q, "{}: query {} of {}", op, j, Q);
  detail::check_flat(op, "m", m, Q * T);
  detail::check_flat(op, "s", s, Q * T);
  detail::check_flat(op, "o", o, Q * T * D);
  detail::check_flat(op, "out", out, T * D);
  detail::check_flat(op, "query", query, D);
  if (partial.data != nullptr) {
    detail::check_flat(op, "partial", partial, T * D);
    check_same_device(op, m.device, {&partial});
  }
  check_same_device(op, m.device, {&s, &o, &query, &out});
  if (T == 0) return;
  const float* pp = static_cast<const float*>(partial.data);
  if (m.device == Device::Cpu)
    return cpu::attn_res_merge(j, T, D, static_cast<const float*>(m.data), static_cast<const float*>(s.data),
                               static_cast<const float*>(o.data), pp, static_cast<const float*>(query.data),
                               eps, static_cast<float*>(out.data));
#ifdef DS_HAVE_CUDA
  return cuda::launch_attn_res_merge(j, T, D, static_cast<const float*>(m.data),
                                     static_cast<const float*>(s.data), static_cast<const float*>(o.data), pp,
                                     static_cast<const float*>(query.data), eps,
                                     static_cast<float*>(out.data));
#endif
  detail::no_backend(op, m.device);
}

}  // namespace ds
