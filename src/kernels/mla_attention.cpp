#include "kernels/mla_attention.h"

#include "kernels/cpu/mla_attention.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/mla_dense.h"
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {
namespace {

// Index views, and on the CPU every page id and position inside the pool and the page table.
void check_paged(const char* op, const MlaPagedLatents& p, int64_t T) {
  DS_CHECK(p.pool != nullptr && p.n_pages > 0 && p.page_tokens > 0 && p.R > 0 && p.dr >= 0,
           "{}: latent pool of {} pages x {} rows x ({} + {})", op, p.n_pages, p.page_tokens, p.R, p.dr);
  const int64_t N = p.page_offset.numel();
  detail::check_flat(op, "page_offset", p.page_offset, N, DType::I32);
  detail::check_flat(op, "page_table", p.page_table, p.page_table.numel(), DType::I32);
  detail::check_flat(op, "tok_seq", p.tok_seq, T, DType::I32);
  detail::check_flat(op, "tok_pos", p.tok_pos, T, DType::I32);
  check_same_device(op, p.device, {&p.page_offset, &p.page_table, &p.tok_seq, &p.tok_pos});
  if (p.device != Device::Cpu) return;
  const int32_t* off = static_cast<const int32_t*>(p.page_offset.data);
  const int32_t* table = static_cast<const int32_t*>(p.page_table.data);
  const int32_t* seq = static_cast<const int32_t*>(p.tok_seq.data);
  const int32_t* pos = static_cast<const int32_t*>(p.tok_pos.data);
  const int64_t n_table = p.page_table.numel();
  for (int64_t i = 0; i < T; ++i) {
    DS_CHECK(seq[i] >= 0 && seq[i] < N, "{}: token {} names sequence {} of {}", op, i, seq[i], N);
    DS_CHECK(pos[i] >= 0, "{}: token {} at position {}", op, i, pos[i]);
    const int64_t last = off[seq[i]] + pos[i] / p.page_tokens;
    const int64_t end = seq[i] + 1 < N ? off[seq[i] + 1] : n_table;
    DS_CHECK(off[seq[i]] >= 0 && last < end, "{}: position {} of sequence {} is beyond its page table", op,
             pos[i], seq[i]);
    DS_CHECK(table[last] >= 0 && table[last] < p.n_pages, "{}: page id {} not in [0, {})", op, table[last],
             p.n_pages);
  }
}

// The q_hat, q_pe and ctx views of a's tokens; returns their number T.
int64_t check_attention_args(const char* op, const MlaPagedLatents& p, const MlaAttentionArgs& a) {
  const int64_t T = a.q_hat.ndim == 2 ? a.q_hat.shape[0] : -1;
  DS_CHECK(a.H > 0, "{}: {} heads", op, a.H);
  detail::check_rows(op, "q_hat", a.q_hat, T, a.H * p.R);
  detail::check_rows(op, "ctx", a.ctx, T, a.H * p.R);
  const int64_t pe_cols = a.q_pe.ndim == 2 ? a.q_pe.shape[1] : -1;
  detail::check_rows(op, "q_pe", a.q_pe, T, pe_cols);
  DS_CHECK(a.q_pe_col >= 0 && a.q_pe_head_stride >= 0 &&
               a.q_pe_col + (a.H - 1) * a.q_pe_head_stride + p.dr <= pe_cols,
           "{}: q_pe columns {} + h * {} (+{}) outside its {} columns", op, a.q_pe_col, a.q_pe_head_stride,
           p.dr, pe_cols);
  check_same_device(op, p.device, {&a.q_hat, &a.q_pe, &a.ctx});
  return T;
}

#ifdef DS_HAVE_CUDA
cuda::MlaLaunch launch_of(const MlaPagedLatents& p, int64_t T) {
  auto i32 = [](const TensorView& v) { return static_cast<const int32_t*>(v.data); };
  return {p.pool,         p.page_tokens,  p.R, p.dr, i32(p.page_table), i32(p.page_offset),
          i32(p.tok_seq), i32(p.tok_pos), T};
}
#endif

}  // namespace

void mla_write_latents(const MlaPagedLatents& p, const TensorView& c, const TensorView& k_pe) {
  const int64_t T = c.ndim == 2 ? c.shape[0] : -1;
  detail::check_rows("mla_write_latents", "c", c, T, p.R);
  detail::check_rows("mla_write_latents", "k_pe", k_pe, T, p.dr);
  check_same_device("mla_write_latents", p.device, {&c, &k_pe});
  check_paged("mla_write_latents", p, T);
  if (T == 0) return;
  if (p.device == Device::Cpu) return cpu::mla_write_latents(p, c, k_pe);
#ifdef DS_HAVE_CUDA
  const cuda::MlaLaunch m = launch_of(p, T);
  return cuda::launch_mla_write(m, static_cast<const float*>(c.data), c.stride[0],
                                static_cast<const float*>(k_pe.data), k_pe.stride[0]);
#endif
  detail::no_backend("mla_write_latents", p.device);
}

void mla_attention(const MlaPagedLatents& p, const MlaAttentionArgs& a) {
  const char* op = "mla_attention";
  const int64_t T = check_attention_args(op, p, a);
  check_paged(op, p, T);
  if (T == 0) return;
  if (p.device == Device::Cpu) return cpu::mla_attention(p, a);
#ifdef DS_HAVE_CUDA
  DS_CHECK(p.R <= 1024 && p.dr <= 1024, "{} (CUDA): latent width {} (+{}) above 1024", op, p.R, p.dr);
  const cuda::MlaLaunch m = launch_of(p, T);
  const float* q_hat = static_cast<const float*>(a.q_hat.data);
  const float* q_pe = static_cast<const float*>(a.q_pe.data) + a.q_pe_col;
  float* ctx = static_cast<float*>(a.ctx.data);
  if (a.bf16_products &&
      cuda::launch_mla_attention_mma(m, a.H, q_hat, a.q_hat.stride[0], q_pe, a.q_pe.stride[0],
                                     a.q_pe_head_stride, a.scale, ctx, a.ctx.stride[0]))
    return;
  // All heads per CTA with the context split (mla_split.cu) where the shape allows, else per head.
  if (cuda::launch_mla_attention_split(m, a.H, q_hat, a.q_hat.stride[0], q_pe, a.q_pe.stride[0],
                                       a.q_pe_head_stride, a.scale, ctx, a.ctx.stride[0]))
    return;
  return cuda::launch_mla_attention(m, a.H, q_hat, a.q_hat.stride[0], q_pe, a.q_pe.stride[0],
                                    a.q_pe_head_stride, a.scale, ctx, a.ctx.stride[0]);
#endif
  detail::no_backend(op, p.device);
}

void mla_attention_dense(const MlaPagedLatents& p, const MlaAttentionArgs& a, int64_t page_off, int64_t p0,
                         int64_t scratch_bytes) {
  const char* op = "mla_attention_dense";
  if (p.device == Device::Cpu) return mla_attention(p, a);
  const int64_t T = check_attention_args(op, p, a);
  DS_CHECK(p0 >= 0 && page_off >= 0 && scratch_bytes > 0, "{}: {} tokens after {}", op, T, p0);
  check_same_device(op, p.device, {&p.page_table});
  const int64_t pages = (p0 + T + p.page_tokens - 1) / p.page_tokens;
  DS_CHECK(page_off + pages <= p.page_table.numel(), "{}: {} pages from entry {} of a {}-entry page table",
           op, pages, page_off, p.page_table.numel());
  if (T == 0) return;
#ifdef DS_HAVE_CUDA
  cuda::MlaDenseArgs d;
  d.pool = p.pool, d.page_tokens = p.page_tokens;
  d.page_table = static_cast<const int32_t*>(p.page_table.data) + page_off;
  d.H = a.H, d.R = p.R, d.dr = p.dr, d.T = T, d.p0 = p0;
  d.q_hat = static_cast<const float*>(a.q_hat.data), d.q_hat_stride = a.q_hat.stride[0];
  d.q_pe = static_cast<const float*>(a.q_pe.data) + a.q_pe_col, d.q_pe_stride = a.q_pe.stride[0];
  d.q_pe_head_stride = a.q_pe_head_stride;
  d.scale = a.scale;
  d.ctx = static_cast<float*>(a.ctx.data), d.ctx_stride = a.ctx.stride[0];
  d.scratch_bytes = scratch_bytes;
  return cuda::mla_attention_dense(d);
#endif
  detail::no_backend(op, p.device);
}

}  // namespace ds
