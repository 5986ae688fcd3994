#include "kernels/mla_prefill.h"

#include <cstdlib>
#include <string_view>

#include "kernels/cpu/mla_prefill.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/mla_dense_launch.h"
#include "kernels/cuda/mla_flash_launch.h"
#endif

namespace ds {
namespace {

// A 2-D bf16 row view [rows, cols] with unit column stride.
void check_bf16_rows(const char* op, const char* what, const TensorView& v, int64_t rows, int64_t cols) {
  DS_CHECK(v.data != nullptr && v.dtype == DType::BF16 && v.ndim == 2 && v.shape[0] == rows &&
               v.shape[1] == cols && v.stride[1] == 1 && v.stride[0] >= cols,
           "{}: {} must be a bf16 row view [{}, {}]", op, what, rows, cols);
}

#ifdef DS_HAVE_CUDA
// The flash kernel's forms at Kimi's widths (MlaFlashForm), named as DS_MLA_FLASH_FORM names them.
struct FlashFormSpec {
  MlaFlashForm form;
  std::string_view name;
  int ahead, key_block;
  bool q_regs, lazy_rescale;
};
constexpr FlashFormSpec kFlashForms[] = {{MlaFlashForm::SmemQ1, "smem-q1", 1, 64, false, false},
                                         {MlaFlashForm::SmemQ1Lazy, "smem-q1-lazy", 1, 64, false, true},
                                         {MlaFlashForm::SmemQ2, "smem-q2", 2, 64, false, true},
                                         {MlaFlashForm::SmemQ3, "smem-q3", 3, 64, false, true},
                                         {MlaFlashForm::RegQ1, "reg-q1", 1, 64, true, true},
                                         {MlaFlashForm::RegQ2, "reg-q2", 2, 64, true, true},
                                         {MlaFlashForm::RegQ4, "reg-q4", 4, 64, true, true},
                                         {MlaFlashForm::SmemQ1N96, "smem-q1-n96", 1, 96, false, false}};

// Auto: SmemQ1N96, or the form DS_MLA_FLASH_FORM names (for measurements).
const FlashFormSpec& flash_form(MlaFlashForm f) {
  const char* e = f == MlaFlashForm::Auto ? std::getenv("DS_MLA_FLASH_FORM") : nullptr;
  const std::string_view name = e != nullptr ? e : "";
  if (f == MlaFlashForm::Auto) f = MlaFlashForm::SmemQ1N96;
  for (const FlashFormSpec& s : kFlashForms)
    if (name.empty() ? s.form == f : s.name == name) return s;
  DS_CHECK(false, "DS_MLA_FLASH_FORM={}: not a flash MLA form", name);
  return kFlashForms[0];
}
#endif

}  // namespace

bool mla_expanded_supported(int64_t dn, int64_t dr, int64_t dv) {
  return (dn == 128 && dr == 64 && dv == 128) || (dn == 64 && dr == 32 && dv == 64);
}

void mla_gather_latents(const MlaPagedLatents& p, int64_t page_off, int64_t L, const TensorView& out) {
  const char* op = "mla_gather_latents";
  DS_CHECK(p.pool != nullptr && p.page_tokens > 0 && p.R > 0 && p.dr >= 0 && L >= 0 && page_off >= 0,
           "{}: {} rows from page-table entry {}", op, L, page_off);
  check_bf16_rows(op, "out", out, L, p.R + p.dr);
  check_same_device(op, p.device, {&out, &p.page_table});
  const int64_t pages = (L + p.page_tokens - 1) / p.page_tokens;
  DS_CHECK(page_off + pages <= p.page_table.numel(), "{}: {} pages from entry {} of a {}-entry page table",
           op, pages, page_off, p.page_table.numel());
  if (L == 0) return;
  if (p.device == Device::Cpu) {
    const int32_t* table = static_cast<const int32_t*>(p.page_table.data) + page_off;
    for (int64_t i = 0; i < pages; ++i)
      DS_CHECK(table[i] >= 0 && table[i] < p.n_pages, "{}: page id {} not in [0, {})", op, table[i],
               p.n_pages);
    return cpu::mla_gather_latents(p, page_off, L, out);
  }
#ifdef DS_HAVE_CUDA
  return cuda::launch_mla_dense_gather({p.pool, p.page_tokens, int(p.R), int(p.dr),
                                        static_cast<const int32_t*>(p.page_table.data) + page_off, L,
                                        static_cast<__nv_bfloat16*>(out.data), nullptr, 0, out.stride[0]});
#endif
  detail::no_backend(op, p.device);
}

void mla_attention_expanded(const MlaExpandedArgs& a) {
  const char* op = "mla_attention_expanded";
  const int64_t T = a.q.ndim == 2 ? a.q.shape[0] : -1, L = a.p0 + T;
  DS_CHECK(a.H > 0 && a.dn > 0 && a.dr >= 0 && a.dv > 0 && a.p0 >= 0, "{}: {} heads of {} + {} / {}, p0 {}",
           op, a.H, a.dn, a.dr, a.dv, a.p0);
  detail::check_rows(op, "q", a.q, T, a.H * (a.dn + a.dr));
  detail::check_rows(op, "o", a.o, T, a.H * a.dv);
  check_bf16_rows(op, "kv", a.kv, L, a.H * (a.dn + a.dv));
  check_bf16_rows(op, "k_pe", a.k_pe, L, a.dr);
  const Device d = a.q.device;
  check_same_device(op, d, {&a.o, &a.kv, &a.k_pe});
  if (T == 0) return;
  if (d == Device::Cpu) return cpu::mla_attention_expanded(a);
#ifdef DS_HAVE_CUDA
  DS_CHECK(mla_expanded_supported(a.dn, a.dr, a.dv), "{} (CUDA): head widths {} + {} / {} not built", op,
           a.dn, a.dr, a.dv);
  DS_CHECK(a.q.stride[0] % 2 == 0 && a.o.stride[0] % 2 == 0 && a.kv.stride[0] % 8 == 0 &&
               a.k_pe.stride[0] % 8 == 0,
           "{} (CUDA): row strides of q, o (even), kv, k_pe (multiples of 8)", op);
  cuda::MlaFlashLaunch l;
  l.q = static_cast<const float*>(a.q.data), l.q_stride = a.q.stride[0];
  l.kv = static_cast<const __nv_bfloat16*>(a.kv.data), l.kv_stride = a.kv.stride[0];
  l.k_pe = static_cast<const __nv_bfloat16*>(a.k_pe.data), l.k_pe_stride = a.k_pe.stride[0];
  l.o = static_cast<float*>(a.o.data), l.o_stride = a.o.stride[0];
  l.H = int(a.H), l.dn = int(a.dn), l.dr = int(a.dr), l.dv = int(a.dv);
  l.T = T, l.p0 = a.p0, l.scale = a.scale;
  const FlashFormSpec& f = flash_form(a.form);
  l.ahead = f.ahead, l.key_block = f.key_block, l.q_regs = f.q_regs, l.lazy_rescale = f.lazy_rescale;
  return cuda::launch_mla_flash(l);
#endif
  detail::no_backend(op, d);
}

}  // namespace ds
