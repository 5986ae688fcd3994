// Batched KDA ops on the CPU (kernels/kda.h kda_prefill / kda_decode, CPU implementation): against
// the per-token oracle, with pool slots, checkpoints at chunk-aligned positions and at sequence
// ends, both gate forms, bf16 and f32 activations; and the interface's argument checks.
#include <gtest/gtest.h>

#include "core/check.h"
#include "kda_batch_case.h"
#include "kernels/cpu/short_conv.h"
#include "kernels/linear.h"

namespace ds {
namespace {

using test::KdaDecodeCase;
using test::KdaPrefillCase;

void expect_prefill_matches_oracle(const KdaPrefillCase& c) {
  std::vector<float> want_o, want_pool;
  c.oracle(want_o, want_pool);
  test::HostTensor o = test::HostTensor::make(DType::F32, c.T(), c.H * c.V);
  o.bytes.assign(o.bytes.size(), 0xff);  // poison: NaN everywhere until written
  std::vector<float> pool = c.pool;
  test::HostTensor q = KdaDecodeCase::as_f32(c.q), k = KdaDecodeCase::as_f32(c.k),
                   v = KdaDecodeCase::as_f32(c.v);
  test::HostTensor f = KdaDecodeCase::as_f32(c.f), b = KdaDecodeCase::as_f32(c.b);
  KdaPrefillCase c32 = c;
  c32.q = q, c32.k = k, c32.v = v, c32.f = f, c32.b = b;
  kda_prefill(c32.args(Device::Cpu, q.bytes.data(), k.bytes.data(), v.bytes.data(), f.bytes.data(),
                       b.bytes.data(), o.bytes.data(), pool.data(), c.a_log.data(), c.dt_bias.data()));
  const std::vector<float> got_o = o.to_f32();
  EXPECT_LT(test::rel_l2(got_o.data(), want_o.data(), want_o.size()), 2e-5);
  EXPECT_LT(test::rel_l2(pool.data(), want_pool.data(), pool.size()), 2e-5);
  EXPECT_LT(test::max_abs_diff(pool.data(), want_pool.data(), pool.size()), 1e-4);
}

TEST(KdaPrefillCpu, SoftplusGateAwkwardLengthsWithCheckpoints) {
  expect_prefill_matches_oracle(
      KdaPrefillCase::make({37, 1, 64, 0, 100}, 3, 32, std::nullopt, DType::BF16, 1, 16));
}

TEST(KdaPrefillCpu, SafeGateSteepDecayF32) {
  expect_prefill_matches_oracle(KdaPrefillCase::make({130, 16, 17}, 2, 32, -5.0f, DType::F32, 2, 32, true));
}

TEST(KdaPrefillCpu, SoftplusGateSteepDecay) {
  expect_prefill_matches_oracle(KdaPrefillCase::make({77, 5}, 2, 32, std::nullopt, DType::BF16, 3, 0, true));
}

TEST(KdaPrefillCpu, RejectsBadCheckpointsAndSlots) {
  KdaPrefillCase c = KdaPrefillCase::make({40, 8}, 2, 16, std::nullopt, DType::F32, 4);
  std::vector<float> o(size_t(c.T() * c.H * c.V)), pool = c.pool;
  auto run = [&](const KdaPrefillCase& x) {
    kda_prefill(x.args(Device::Cpu, x.q.bytes.data(), x.k.bytes.data(), x.v.bytes.data(), x.f.bytes.data(),
                       x.b.bytes.data(), o.data(), pool.data(), x.a_log.data(), x.dt_bias.data()));
  };
  KdaPrefillCase bad = c;
  bad.checkpoints = {{0, 0, 20}};  // not a multiple of 16 and not the end
  EXPECT_THROW(run(bad), Error);
  bad.checkpoints = {{1, 0, 8}, {0, 1, 16}};  // not sorted by sequence
  EXPECT_THROW(run(bad), Error);
  bad = c;
  bad.final_slot[1] = int32_t(c.n_slots);
  EXPECT_THROW(run(bad), Error);
  bad = c;
  bad.initial_slot[0] = -2;
  EXPECT_THROW(run(bad), Error);
  bad = c;
  bad.cu_seqlens = {0, 40, 30};
  EXPECT_THROW(run(bad), Error);
  run(c);  // the unmodified case is accepted
}

TEST(KdaDecodeCpu, MatchesConvPlusRecurrenceOracle) {
  for (std::optional<float> lb : {std::optional<float>{}, std::optional<float>{-5.0f}}) {
    const KdaDecodeCase c = KdaDecodeCase::make(5, 3, 16, lb, DType::BF16, 11);
    std::vector<float> y, pool, conv;
    c.reference(y, pool, conv);
    // Oracle, sequence by sequence, from the reference conv and recurrence.
    const int64_t P = c.H * c.K, w = c.W - 1;
    std::vector<float> want_pool = c.pool, want_conv = c.conv;
    for (int64_t i = 0; i < c.B; ++i) {
      const int32_t slot = c.slots[size_t(i)];
      std::vector<float> act(static_cast<size_t>(3 * P)), x(static_cast<size_t>(P));
      const test::HostTensor* pre[3] = {&c.q, &c.k, &c.v};
      for (int j = 0; j < 3; ++j) {
        for (int64_t ch = 0; ch < P; ++ch) x[size_t(ch)] = pre[j]->get(i * P + ch);
        cpu::short_conv_silu_ref(x.data(), P, 1, P, c.taps.data() + j * P * c.W, c.W,
                                 want_conv.data() + slot * c.conv_size() + j * P * w, act.data() + j * P, P);
      }
      cpu::l2norm_rows(act.data(), c.H, c.K, kKdaQkL2Eps);
      cpu::l2norm_rows(act.data() + P, c.H, c.K, kKdaQkL2Eps);
      std::vector<float> g(static_cast<size_t>(P)), beta(static_cast<size_t>(c.H)), o(g.size()), r(g.size());
      for (int64_t ch = 0; ch < P; ++ch)
        g[size_t(ch)] = c.f.get(i * P + ch), r[size_t(ch)] = c.r.get(i * P + ch);
      for (int64_t h = 0; h < c.H; ++h) beta[size_t(h)] = sigmoidf(c.b.get(i * c.H + h));
      cpu::kda_decay_gate(lb, g.data(), 1, int(c.H), int(c.K), c.a_log.data(), c.dt_bias.data(), g.data());
      cpu::kda_recurrent_ref(KdaDims{1, c.H, c.K, c.K},
                             KdaTensors{act.data(), act.data() + P, act.data() + 2 * P, g.data(), beta.data(),
                                        want_pool.data() + slot * c.state_size(), o.data()},
                             c.scale);
      cpu::rmsnorm_gated_sigmoid(o.data(), r.data(), c.H, c.K, c.o_norm.data(), c.eps, o.data());
      EXPECT_LT(test::max_abs_diff(y.data() + i * P, o.data(), size_t(P)), 1e-5) << "sequence " << i;
    }
    EXPECT_LT(test::max_abs_diff(pool.data(), want_pool.data(), pool.size()), 1e-6);
    EXPECT_EQ(conv, want_conv);
  }
}

TEST(KernelInterface, RejectsMixedDevicesAndMissingBackends) {
  std::vector<float> x(8), y(8);
  const WeightView w{x.data(), DType::F32, 2, 4};
  TensorView xv = f32_rows(x.data(), 2, 4), yv = f32_rows(y.data(), 2, 2);
  xv.device = Device::Cuda;
  EXPECT_THROW(linear(xv, w, yv), Error);  // a CUDA tensor with a host weight
  TensorView a = f32_vec(x.data(), 8), b = f32_vec(y.data(), 8);
  a.device = b.device = Device::Cuda;
  EXPECT_THROW(softplus(a, b), Error);  // no CUDA softplus kernel, or no CUDA at all
}

}  // namespace
}  // namespace ds
