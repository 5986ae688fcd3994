#include "kernels/cuda/kda.h"

#include <vector>

#include "core/check.h"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/memory.h"

namespace ds::cuda {
namespace {

constexpr int64_t kD = 128;

bool rows_aligned16(const TensorView& v) {
  const int64_t es = int64_t(dtype_size(v.dtype));
  return reinterpret_cast<uintptr_t>(v.data) % 16 == 0 && (v.stride[0] * es) % 16 == 0;
}

}  // namespace

namespace {

// The per-token f32 recurrence (KdaPrefillArgs::exact): index arrays copied to the device.
void kda_prefill_exact(const KdaPrefillArgs& a) {
  const int64_t N = int64_t(a.cu_seqlens.size()) - 1;
  std::vector<int32_t> ck_offset(size_t(N) + 1, 0), ck_slot;
  std::vector<int64_t> ck_after;
  for (const KdaCheckpointRequest& c : a.checkpoints) {
    ++ck_offset[size_t(c.seq) + 1];
    ck_slot.push_back(c.slot);
    ck_after.push_back(c.after_tokens);
  }
  for (int64_t n = 0; n < N; ++n) ck_offset[size_t(n) + 1] += ck_offset[size_t(n)];
  const Device d = Device::Cuda;
  const Buffer cu = Buffer::from_host(d, a.cu_seqlens), init = Buffer::from_host(d, a.initial_slot);
  const Buffer fin = Buffer::from_host(d, a.final_slot), off = Buffer::from_host<int32_t>(d, ck_offset);
  const Buffer cs = Buffer::from_host<int32_t>(d, ck_slot), ca = Buffer::from_host<int64_t>(d, ck_after);
  KdaExactLaunch l{};
  l.N = int(N), l.H = int(a.H);
  auto f = [](const TensorView& v) { return static_cast<const float*>(v.data); };
  l.q = f(a.q), l.k = f(a.k), l.v = f(a.v), l.f = f(a.f), l.b = f(a.b), l.o = static_cast<float*>(a.o.data);
  l.q_stride = a.q.stride[0], l.k_stride = a.k.stride[0], l.v_stride = a.v.stride[0];
  l.f_stride = a.f.stride[0], l.b_stride = a.b.stride[0], l.o_stride = a.o.stride[0];
  l.a_log = f(a.gate.a_log), l.dt_bias = f(a.gate.dt_bias);
  l.safe_gate = a.gate.lower_bound.has_value(), l.lower_bound = a.gate.lower_bound.value_or(0.0f);
  l.scale = a.scale;
  l.pool = a.pool.data, l.slot_stride = a.pool.slot_stride;
  l.cu_seqlens = cu.as<int64_t>(), l.initial_slot = init.as<int32_t>(), l.final_slot = fin.as<int32_t>();
  l.ck_offset = off.as<int32_t>(), l.ck_slot = cs.as<int32_t>(), l.ck_after = ca.as<int64_t>();
  launch_kda_exact(l);
}

}  // namespace

void kda_prefill(const KdaPrefillArgs& a) {
  DS_CHECK(a.K == kD && a.V == kD, "kda_prefill (CUDA): K = {}, V = {}; only 128 is implemented", a.K, a.V);
  if (a.exact) return kda_prefill_exact(a);
  DS_CHECK(a.cu_seqlens.back() < (int64_t(1) << 31), "kda_prefill (CUDA): {} tokens, at most 2^31 - 1",
           a.cu_seqlens.back());
  for (const TensorView* v : {&a.q, &a.k, &a.f, &a.v})
    DS_CHECK(rows_aligned16(*v), "kda_prefill (CUDA): q, k, f and v need 16-byte aligned rows");
  std::vector<int32_t> ck_seq, ck_slot;
  std::vector<int64_t> ck_after;
  for (const KdaCheckpointRequest& c : a.checkpoints)
    ck_seq.push_back(c.seq), ck_slot.push_back(c.slot), ck_after.push_back(c.after_tokens);
  KdaPrefillLaunch l;
  l.bf16 = a.q.dtype == DType::BF16;
  l.N = int(a.cu_seqlens.size()) - 1, l.H = int(a.H);
  l.cu_seqlens = a.cu_seqlens.data();
  l.q = a.q.data, l.k = a.k.data, l.v = a.v.data, l.f = a.f.data, l.b = a.b.data, l.o = a.o.data;
  l.q_stride = a.q.stride[0], l.k_stride = a.k.stride[0], l.v_stride = a.v.stride[0];
  l.f_stride = a.f.stride[0], l.b_stride = a.b.stride[0], l.o_stride = a.o.stride[0];
  l.a_log = static_cast<const float*>(a.gate.a_log.data);
  l.dt_bias = static_cast<const float*>(a.gate.dt_bias.data);
  l.safe_gate = a.gate.lower_bound.has_value(), l.lower_bound = a.gate.lower_bound.value_or(0.0f);
  l.scale = a.scale;
  l.pool = a.pool.data, l.slot_stride = a.pool.slot_stride;
  l.initial_slot = a.initial_slot.data(), l.final_slot = a.final_slot.data();
  l.n_checkpoints = int(ck_seq.size());
  l.ck_seq = ck_seq.data(), l.ck_slot = ck_slot.data(), l.ck_after = ck_after.data();
  l.stream = a.stream;
  launch_kda_prefill(l);
}

void kda_decode(const KdaDecodeArgs& a) {
  DS_CHECK(a.K == kD && a.V == kD, "kda_decode (CUDA): K = {}, V = {}; only 128 is implemented", a.K, a.V);
  DS_CHECK(a.W >= 2 && a.W <= 8, "kda_decode (CUDA): conv kernel size {} not in [2, 8]", a.W);
  DS_CHECK(a.pool.slot_stride % 4 == 0 && reinterpret_cast<uintptr_t>(a.pool.data) % 16 == 0,
           "kda_decode (CUDA): state slots must be 16-byte aligned (stride {})", a.pool.slot_stride);
  if (a.B == 0) return;
  KdaDecodeLaunch l;
  l.bf16 = a.q_pre.dtype == DType::BF16;
  l.B = int(a.B), l.H = int(a.H), l.W = int(a.W);
  l.q = a.q_pre.data, l.k = a.k_pre.data, l.v = a.v_pre.data, l.f = a.f.data, l.b = a.b.data, l.r = a.r.data;
  l.y = a.y.data;
  l.q_stride = a.q_pre.stride[0], l.k_stride = a.k_pre.stride[0], l.v_stride = a.v_pre.stride[0];
  l.f_stride = a.f.stride[0], l.b_stride = a.b.stride[0], l.r_stride = a.r.stride[0],
  l.y_stride = a.y.stride[0];
  l.taps = static_cast<const float*>(a.conv_taps.data), l.o_norm = static_cast<const float*>(a.o_norm.data);
  l.a_log = static_cast<const float*>(a.gate.a_log.data);
  l.dt_bias = static_cast<const float*>(a.gate.dt_bias.data);
  l.safe_gate = a.gate.lower_bound.has_value(), l.lower_bound = a.gate.lower_bound.value_or(0.0f);
  l.scale = a.scale, l.eps = a.norm_eps;
  l.pool = a.pool.data, l.slot_stride = a.pool.slot_stride;
  l.conv = a.conv_data, l.conv_stride = a.conv_slot_stride;
  l.slots = static_cast<const int32_t*>(a.slots.data);
  l.stream = a.stream;
  l.overlap_prior_kernel = a.overlap_prior_kernel;
  launch_kda_decode(l);
}

}  // namespace ds::cuda
