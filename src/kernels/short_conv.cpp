#include "kernels/short_conv.h"

#include <vector>

#include "kernels/cpu/short_conv.h"
#include "kernels/dispatch.h"
#include "kernels/memory.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {

void short_conv_silu(const TensorView& x, const TensorView& taps, const TensorView& state,
                     const TensorView& y) {
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1, C = x.ndim == 2 ? x.shape[1] : -1;
  const int64_t W = taps.ndim == 2 ? taps.shape[1] : -1;
  detail::check_rows("short_conv_silu", "x", x, T, C);
  detail::check_rows("short_conv_silu", "y", y, T, C);
  DS_CHECK(W >= 1, "short_conv_silu: taps must be [C, W], got {} dims", taps.ndim);
  detail::check_flat("short_conv_silu", "taps", taps, C * W);
  detail::check_flat("short_conv_silu", "state", state, C * (W - 1));
  check_same_device("short_conv_silu", x.device, {&taps, &state, &y});
  if (x.device != Device::Cpu) detail::no_backend("short_conv_silu", x.device);
  cpu::short_conv_silu(static_cast<const float*>(x.data), x.stride[0], T, C,
                       static_cast<const float*>(taps.data), W, static_cast<float*>(state.data),
                       static_cast<float*>(y.data), y.stride[0]);
}

void short_conv_batch(const ShortConvBatchArgs& a) {
  const char* op = "short_conv_batch";
  DS_CHECK(a.cu_seqlens.size() >= 2 && a.cu_seqlens[0] == 0, "{}: cu_seqlens needs N + 1 >= 2 entries from 0",
           op);
  const int64_t N = int64_t(a.cu_seqlens.size()) - 1, T = a.cu_seqlens.back();
  const int64_t C = a.x.ndim == 2 ? a.x.shape[1] : -1, W = a.taps.ndim == 2 ? a.taps.shape[1] : -1;
  detail::check_rows(op, "x", a.x, T, C);
  detail::check_rows(op, "y", a.y, T, C);
  DS_CHECK(W >= 2, "{}: taps must be [C, W >= 2]", op);
  detail::check_flat(op, "taps", a.taps, C * W);
  check_same_device(op, a.device, {&a.x, &a.taps, &a.y});
  DS_CHECK(a.pool != nullptr && a.slot_stride >= C * (W - 1) && a.n_slots > 0,
           "{}: window pool of {} slots, stride {} (window {} values)", op, a.n_slots, a.slot_stride,
           C * (W - 1));
  DS_CHECK(int64_t(a.slots.size()) == N, "{}: {} slots for {} sequences", op, a.slots.size(), N);
  std::vector<int32_t> ck_offset(size_t(N) + 1, 0), ck_slot;
  std::vector<int64_t> ck_after;
  for (int64_t n = 0; n < N; ++n) {
    DS_CHECK(a.cu_seqlens[size_t(n) + 1] >= a.cu_seqlens[size_t(n)], "{}: cu_seqlens decreases at {}", op, n);
    DS_CHECK(a.slots[size_t(n)] >= 0 && a.slots[size_t(n)] < a.n_slots,
             "{}: sequence {} slot {} not in [0, {})", op, n, a.slots[size_t(n)], a.n_slots);
  }
  for (size_t i = 0; i < a.checkpoints.size(); ++i) {
    const KdaCheckpointRequest& c = a.checkpoints[i];
    DS_CHECK(c.seq >= 0 && c.seq < N && c.slot >= 0 && c.slot < a.n_slots,
             "{}: checkpoint {} (seq {}, slot {})", op, i, c.seq, c.slot);
    const int64_t len = a.cu_seqlens[size_t(c.seq) + 1] - a.cu_seqlens[size_t(c.seq)];
    DS_CHECK(c.after_tokens > 0 && c.after_tokens <= len, "{}: checkpoint after {} of {} tokens", op,
             c.after_tokens, len);
    DS_CHECK(i == 0 || a.checkpoints[i - 1].seq < c.seq ||
                 (a.checkpoints[i - 1].seq == c.seq && a.checkpoints[i - 1].after_tokens < c.after_tokens),
             "{}: checkpoints must be sorted by (sequence, position) without repeats (entry {})", op, i);
    ++ck_offset[size_t(c.seq) + 1];
    ck_slot.push_back(c.slot);
    ck_after.push_back(c.after_tokens);
  }
  for (int64_t n = 0; n < N; ++n) ck_offset[size_t(n) + 1] += ck_offset[size_t(n)];
  const float* taps = static_cast<const float*>(a.taps.data);
  if (a.device == Device::Cpu) {
    const int64_t w = W - 1;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t r0 = a.cu_seqlens[size_t(n)], len = a.cu_seqlens[size_t(n) + 1] - r0;
      float* win = a.pool + int64_t(a.slots[size_t(n)]) * a.slot_stride;
      int64_t done = 0;
      for (int32_t c = ck_offset[size_t(n)]; c <= ck_offset[size_t(n) + 1]; ++c) {
        const bool ck = c < ck_offset[size_t(n) + 1];
        const int64_t upto = ck ? ck_after[size_t(c)] : len;
        cpu::short_conv_silu(static_cast<const float*>(a.x.data) + (r0 + done) * a.x.stride[0], a.x.stride[0],
                             upto - done, C, taps, W, win,
                             static_cast<float*>(a.y.data) + (r0 + done) * a.y.stride[0], a.y.stride[0]);
        if (ck)
          copy_bytes(a.pool + int64_t(ck_slot[size_t(c)]) * a.slot_stride, Device::Cpu, win, Device::Cpu,
                     C * w * int64_t(sizeof(float)));
        done = upto;
      }
    }
    return;
  }
#ifdef DS_HAVE_CUDA
  if (T == 0 && a.checkpoints.empty()) return;
  const Buffer d_cu = Buffer::from_host(a.device, a.cu_seqlens),
               d_slot = Buffer::from_host(a.device, a.slots);
  const Buffer d_off = Buffer::from_host<int32_t>(a.device, ck_offset);
  const Buffer d_ck_slot = Buffer::from_host<int32_t>(a.device, ck_slot);
  const Buffer d_ck_after = Buffer::from_host<int64_t>(a.device, ck_after);
  cuda::ShortConvLaunch l{};
  l.N = int(N), l.C = C, l.W = W;
  l.x = static_cast<const float*>(a.x.data), l.x_stride = a.x.stride[0];
  l.taps = taps, l.y = static_cast<float*>(a.y.data), l.y_stride = a.y.stride[0];
  l.pool = a.pool, l.slot_stride = a.slot_stride;
  l.cu_seqlens = d_cu.as<int64_t>(), l.slot = d_slot.as<int32_t>(), l.ck_offset = d_off.as<int32_t>();
  l.ck_slot = d_ck_slot.as<int32_t>(), l.ck_after = d_ck_after.as<int64_t>();
  l.T = T, l.n_checkpoints = int(ck_slot.size());
  return cuda::launch_short_conv_batch(l);
#endif
  detail::no_backend(op, a.device);
}

}  // namespace ds
