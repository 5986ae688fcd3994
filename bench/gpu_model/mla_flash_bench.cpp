#include "mla_flash_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/memory.h"
#include "kernels/mla_prefill.h"

namespace ds::bench {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void run_mla_flash_bench(const ModelConfig& c, int chunk, const std::vector<int>& lengths) {
  const MlaConfig& m = c.mla;
  const int64_t H = m.n_head, dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim, dv = m.v_head_dim;
  if (!mla_expanded_supported(dn, dr, dv)) {
    fmt::print("flash MLA alone: head widths {} + {} / {} not built\n", dn, dr, dv);
    return;
  }
  // Named as DS_MLA_FLASH_FORM names them (kernels/mla_prefill.h MlaFlashForm).
  const std::vector<std::pair<MlaFlashForm, const char*>> forms = {
      {MlaFlashForm::SmemQ1, "smem-q1"}, {MlaFlashForm::SmemQ1Lazy, "smem-q1-lazy"},
      {MlaFlashForm::SmemQ2, "smem-q2"}, {MlaFlashForm::SmemQ3, "smem-q3"},
      {MlaFlashForm::RegQ1, "reg-q1"},   {MlaFlashForm::RegQ2, "reg-q2"},
      {MlaFlashForm::RegQ4, "reg-q4"},   {MlaFlashForm::SmemQ1N96, "smem-q1-n96"}};
  fmt::print(
      "flash MLA alone ({} heads, {} + {} / {}; the last chunk of each length; best of 2 x 5, the forms in "
      "forward then reverse order):\n",
      H, dn, dr, dv);
  fmt::print("  {:>7} {:>6} {:>8} {:>13} {:>9} {:>9}\n", "tokens", "rows", "TFLOP", "form", "ms", "TFLOP/s");
  for (int len : lengths) {
    const int64_t T = std::min<int64_t>(chunk, len), p0 = len - T, L = len;
    const Buffer q(Device::Cuda, T * H * (dn + dr) * 4), kv(Device::Cuda, L * H * (dn + dv) * 2),
        kpe(Device::Cuda, L * dr * 2), o(Device::Cuda, T * H * dv * 4);
    fill_uniform(TensorView::contiguous(q.data(), DType::F32, {T * H * (dn + dr)}, Device::Cuda), 11, 1.0f);
    fill_uniform(TensorView::contiguous(kv.data(), DType::BF16, {L * H * (dn + dv)}, Device::Cuda), 12, 1.0f);
    fill_uniform(TensorView::contiguous(kpe.data(), DType::BF16, {L * dr}, Device::Cuda), 13, 1.0f);
    MlaExpandedArgs a;
    a.H = H, a.dn = dn, a.dr = dr, a.dv = dv, a.p0 = p0, a.scale = 0.07f;
    a.q = TensorView::matrix(q.data(), DType::F32, T, H * (dn + dr), H * (dn + dr), Device::Cuda);
    a.kv = TensorView::matrix(kv.data(), DType::BF16, L, H * (dn + dv), H * (dn + dv), Device::Cuda);
    a.k_pe = TensorView::matrix(kpe.data(), DType::BF16, L, dr, dr, Device::Cuda);
    a.o = TensorView::matrix(o.data(), DType::F32, T, H * dv, H * dv, Device::Cuda);
    // Causal products: row i sees p0 + i + 1 keys.
    const double flops =
        2.0 * double(H) * double(dn + dr + dv) * (double(p0) * double(T) + double(T) * double(T + 1) / 2);
    std::vector<double> best(forms.size(), 1e30);
    for (int round = 0; round < 2; ++round)
      for (size_t k = 0; k < forms.size(); ++k) {
        const size_t f = round == 0 ? k : forms.size() - 1 - k;
        a.form = forms[f].first;
        mla_attention_expanded(a);  // warm-up
        for (int r = 0; r < 5; ++r) {
          synchronize(Device::Cuda);
          const double t0 = now_s();
          mla_attention_expanded(a);
          synchronize(Device::Cuda);
          best[f] = std::min(best[f], now_s() - t0);
        }
      }
    for (size_t f = 0; f < forms.size(); ++f)
      fmt::print("  {:>7} {:>6} {:>8.2f} {:>13} {:>9.3f} {:>9.1f}\n", len, T, flops / 1e12, forms[f].second,
                 best[f] * 1e3, flops / best[f] / 1e12);
  }
}

}  // namespace ds::bench
