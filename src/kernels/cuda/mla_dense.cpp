// Tensor-core MLA prefill for one sequence's run of new tokens (kernels/mla_attention.h
// mla_attention_dense): latents gathered as bf16, per head-group and block of query rows the scores
// as one strided-batched cuBLASLt product against every latent row the block can see, a causal
// softmax, and the context as a second product against cᵀ.
#include "kernels/cuda/mla_dense.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dense.h"
#include "kernels/cuda/mla_dense_launch.h"

namespace ds::cuda {
namespace {

constexpr int64_t kRowBlock = 1024;  // query rows per block: later keys than the block's last are skipped

int64_t round8(int64_t n) {
  return (n + 7) / 8 * 8;
}

// Device scratch from the stream-ordered pool, freed in stream order.
struct Scratch {
  void* p = nullptr;
  explicit Scratch(int64_t bytes) {
    check(cudaMallocAsync(&p, size_t(std::max<int64_t>(bytes, 16)), cudaStreamPerThread),
          "mla dense: scratch");
  }
  ~Scratch() { cudaFreeAsync(p, cudaStreamPerThread); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

}  // namespace

void mla_attention_dense(const MlaDenseArgs& d) {
  const int64_t H = d.H, R = d.R, dr = d.dr, E = R + dr, T = d.T, L = d.p0 + T;
  DS_CHECK(H >= 1 && T >= 1 && d.p0 >= 0 && R % 8 == 0 && E % 8 == 0,
           "mla_attention_dense (CUDA): {} heads, {} tokens after {}, latent {} + {} (multiples of 8)", H, T,
           d.p0, R, dr);
  const int64_t ldv = round8(L);
  Scratch K(L * E * 2), Vt(R * ldv * 2), Q(H * T * E * 2);
  launch_mla_dense_gather({d.pool, d.page_tokens, int(R), int(dr), d.page_table, L, K.as<__nv_bfloat16>(),
                           Vt.as<__nv_bfloat16>(), ldv});
  launch_mla_dense_pack_q({d.q_hat, d.q_hat_stride, d.q_pe, d.q_pe_stride, d.q_pe_head_stride, int(H), int(R),
                           int(dr), T, Q.as<__nv_bfloat16>()});
  // Heads per group: as many as the scratch allows for the widest block (at least one).
  const int64_t tb_max = std::min(kRowBlock, T), ld_max = round8(L);
  const int64_t per_head = tb_max * ld_max * (4 + 2);
  const int64_t g = std::clamp<int64_t>(d.scratch_bytes / per_head, 1, H);
  Scratch S(g * tb_max * ld_max * 4), P(g * tb_max * ld_max * 2);
  const Device dev = Device::Cuda;
  for (int64_t t0 = 0; t0 < T; t0 += kRowBlock) {
    const int64_t tb = std::min(kRowBlock, T - t0), Lb = d.p0 + t0 + tb, ld = round8(Lb);
    for (int64_t h0 = 0; h0 < H; h0 += g) {
      const int64_t gh = std::min(g, H - h0);
      // S_h [tb, Lb] = Q_h[t0 .. t0 + tb) · K[0 .. Lb)ᵀ
      const TensorView qx =
          TensorView::matrix(Q.as<__nv_bfloat16>() + (h0 * T + t0) * E, DType::BF16, tb, E, E, dev);
      const WeightView kw{K.p, DType::BF16, Lb, E, dev};
      const TensorView sy = TensorView::matrix(S.p, DType::F32, tb, Lb, ld, dev);
      linear_heads_ld(qx, kw, E, sy, gh, T * E, 0, tb * ld);
      launch_mla_dense_softmax({S.as<float>(), P.as<__nv_bfloat16>(), tb, Lb, ld, d.p0 + t0, d.scale},
                               int(gh));
      // ctx_h [tb, R] = P_h · (cᵀ[:, 0 .. Lb))ᵀ, written at head h's columns of ctx.
      const TensorView px = TensorView::matrix(P.p, DType::BF16, tb, Lb, ld, dev);
      const WeightView vw{Vt.p, DType::BF16, R, Lb, dev};
      const TensorView cy =
          TensorView::matrix(d.ctx + t0 * d.ctx_stride + h0 * R, DType::F32, tb, R, d.ctx_stride, dev);
      linear_heads_ld(px, vw, ldv, cy, gh, tb * ld, 0, R);
    }
  }
}

}  // namespace ds::cuda
