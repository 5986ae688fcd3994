// CUDA KDA kernels (kernels/kda.h on Device::Cuda) against the f32 per-token oracle / the CPU
// implementation, on random inputs of awkward shapes. ctest label "gpu"; every test skips with a
// message when no CUDA device is present.
//
// Tolerances. Activations and outputs are bf16 (or f32), the state and all accumulation f32, but
// the tensor-core operands are bf16: K̂, Q̂, K̃, A = (I+L)⁻¹Diag(β), the intra-chunk scores, the
// pseudo-values Ṽ and the state itself as the operand of its products, each rounded to 8
// significant bits (relative error ≤ 2^-9 ≈ 2e-3), as in fla's chunk_kda and FlashKDA. Sums of
// many such terms with random signs keep the relative error of o and S near that size, so the
// bound is ‖x − oracle‖ / ‖oracle‖ ≤ 1e-2 for o and every written state (the upper end of the bf16
// range; the measured values are printed and recorded in docs/perf.md). Slots nobody writes must
// stay bit-identical. Decode keeps every operand f32: its bound is 1e-5 (f32 I/O) or bf16 output
// rounding (bf16 I/O).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "../kda_batch_case.h"
#include "kernels/cuda/device_buffer.h"

namespace ds {
namespace {

using cuda::DeviceBuffer;
using test::HostTensor;
using test::KdaDecodeCase;
using test::KdaPrefillCase;

class KdaCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

DeviceBuffer upload(const HostTensor& t) {
  return DeviceBuffer::from(t.bytes);
}

struct PrefillErrors {
  double o = 0, state = 0;
};

PrefillErrors run_prefill_case(const KdaPrefillCase& c, const char* name) {
  DeviceBuffer q = upload(c.q), k = upload(c.k), v = upload(c.v), f = upload(c.f), b = upload(c.b);
  DeviceBuffer o(c.v.bytes.size());
  o.fill_bytes(0xff);  // poison: every output element must be written
  DeviceBuffer pool = DeviceBuffer::from(c.pool), a_log = DeviceBuffer::from(c.a_log),
               dt = DeviceBuffer::from(c.dt_bias);
  kda_prefill(c.args(Device::Cuda, q.data(), k.data(), v.data(), f.data(), b.data(), o.data(),
                     pool.as<float>(), a_log.as<float>(), dt.as<float>()));
  cuda::check(cudaDeviceSynchronize(), "kda_prefill test");
  HostTensor got = HostTensor::make(c.v.dtype, c.v.rows, c.v.cols);
  got.bytes = o.to_host<uint8_t>();
  const std::vector<float> got_o = got.to_f32(), got_pool = pool.to_host<float>();
  std::vector<float> want_o, want_pool;
  c.oracle(want_o, want_pool);
  PrefillErrors e;
  e.o = test::rel_l2(got_o.data(), want_o.data(), want_o.size());
  // Written slots: relative error; all other slots: unchanged bits.
  std::vector<bool> written(size_t(c.n_slots), false);
  for (int32_t s : c.final_slot) written[size_t(s)] = true;
  for (const KdaCheckpointRequest& r : c.checkpoints) written[size_t(r.slot)] = true;
  const int64_t S = c.state_size();
  for (int64_t s = 0; s < c.n_slots; ++s) {
    const float* g = got_pool.data() + s * S;
    const float* w = want_pool.data() + s * S;
    if (written[size_t(s)])
      e.state = std::max(e.state, test::rel_l2(g, w, size_t(S)));
    else
      EXPECT_EQ(std::memcmp(g, c.pool.data() + s * S, size_t(S) * sizeof(float)), 0)
          << "slot " << s << " changed";
  }
  std::printf("[kda_prefill %s] T=%lld N=%lld H=%lld: rel L2 error o %.3e, states %.3e\n", name,
              (long long)c.T(), (long long)c.N(), (long long)c.H, e.o, e.state);
  return e;
}

constexpr double kPrefillTol = 1e-2;

void expect_prefill(const KdaPrefillCase& c, const char* name) {
  const PrefillErrors e = run_prefill_case(c, name);
  EXPECT_LT(e.o, kPrefillTol) << name;
  EXPECT_LT(e.state, kPrefillTol) << name;
}

TEST_F(KdaCuda, PrefillSafeGateAwkwardLengths) {
  expect_prefill(KdaPrefillCase::make({37, 1, 64, 0, 100, 17}, 4, 128, -5.0f, DType::BF16, 21, 16),
                 "safe/awkward");
}

TEST_F(KdaCuda, PrefillSoftplusGateSteepDecayTakesExactPath) {
  // Odd heads decay by ~30 nats per token: the prep kernel's exact pair path; even heads: mma path.
  expect_prefill(KdaPrefillCase::make({77, 5, 300}, 4, 128, std::nullopt, DType::BF16, 22, 32, true),
                 "softplus/steep");
}

TEST_F(KdaCuda, PrefillSafeGateSteepDecay) {
  expect_prefill(KdaPrefillCase::make({90, 33}, 2, 128, -5.0f, DType::BF16, 23, 16, true), "safe/steep");
}

TEST_F(KdaCuda, PrefillF32Activations) {
  expect_prefill(KdaPrefillCase::make({50, 129}, 2, 128, std::nullopt, DType::F32, 24, 48), "softplus/f32");
}

TEST_F(KdaCuda, PrefillKimiLinearHeads) {
  expect_prefill(KdaPrefillCase::make({300, 45}, 32, 128, std::nullopt, DType::BF16, 25, 64),
                 "kimi-linear H32");
}

TEST_F(KdaCuda, PrefillK3Heads) {
  expect_prefill(KdaPrefillCase::make({64, 20}, 96, 128, -5.0f, DType::BF16, 26, 16), "k3 H96");
}

TEST_F(KdaCuda, PrefillManyShortSequences) {
  std::vector<int64_t> lens;
  for (int i = 0; i < 40; ++i) lens.push_back(1 + (i * 7) % 40);
  expect_prefill(KdaPrefillCase::make(lens, 2, 128, -5.0f, DType::BF16, 27, 16), "40 short");
}

TEST_F(KdaCuda, PrefillLongSequences) {
  expect_prefill(KdaPrefillCase::make({4000}, 2, 128, -5.0f, DType::BF16, 28, 1024), "long safe");
  expect_prefill(KdaPrefillCase::make({3001}, 2, 128, std::nullopt, DType::BF16, 29, 1024), "long softplus");
}

// Checkpoints off the 16-token grid (every 37, 5 or 100 tokens): the chunk holding each position is
// cut short there and the sequence is chunked again from it, the pieces in successive segments.
TEST_F(KdaCuda, PrefillCheckpointsOffTheChunkGrid) {
  expect_prefill(KdaPrefillCase::make({300, 45, 0, 129, 7}, 2, 128, -5.0f, DType::BF16, 45, 37),
                 "safe, every 37");
  expect_prefill(KdaPrefillCase::make({90, 33}, 2, 128, std::nullopt, DType::BF16, 46, 5, true),
                 "softplus steep, every 5");
  setenv("DS_KDA_SEGMENTS", "4", 1);
  expect_prefill(KdaPrefillCase::make({700, 61}, 3, 128, -5.0f, DType::F32, 47, 100),
                 "safe f32, every 100, 4 segments");
  unsetenv("DS_KDA_SEGMENTS");
}

// A prefill uploads its plan from host memory on every call: capturing it into a graph is refused
// with an error (a replay would read freed memory), and nothing is queued.
TEST_F(KdaCuda, PrefillRefusesGraphCapture) {
  const KdaPrefillCase c = KdaPrefillCase::make({40}, 2, 128, -5.0f, DType::BF16, 49);
  DeviceBuffer q = upload(c.q), k = upload(c.k), v = upload(c.v), f = upload(c.f), b = upload(c.b);
  DeviceBuffer o(c.v.bytes.size()), pool = DeviceBuffer::from(c.pool), a_log = DeviceBuffer::from(c.a_log),
                                    dt = DeviceBuffer::from(c.dt_bias);
  KdaPrefillArgs a = c.args(Device::Cuda, q.data(), k.data(), v.data(), f.data(), b.data(), o.data(),
                            pool.as<float>(), a_log.as<float>(), dt.as<float>());
  cudaStream_t stream = nullptr;
  cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  a.stream = stream;
  cuda::check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  EXPECT_THROW(kda_prefill(a), Error);
  cudaGraph_t graph = nullptr;
  cuda::check(cudaStreamEndCapture(stream, &graph), "end capture");
  size_t nodes = 0;
  cuda::check(cudaGraphGetNodes(graph, nullptr, &nodes), "graph nodes");
  EXPECT_EQ(nodes, 0u);
  cudaGraphDestroy(graph), cudaStreamDestroy(stream);
}

TEST_F(KdaCuda, PrefillSplitAcrossCallsEqualsOneCall) {
  // Tokens [0, 96) then [96, 250) with the state carried in a slot == one call over [0, 250).
  const KdaPrefillCase whole = KdaPrefillCase::make({250}, 2, 128, std::nullopt, DType::BF16, 30);
  DeviceBuffer q = upload(whole.q), k = upload(whole.k), v = upload(whole.v), f = upload(whole.f),
               b = upload(whole.b), a_log = DeviceBuffer::from(whole.a_log),
               dt = DeviceBuffer::from(whole.dt_bias);
  DeviceBuffer o1(whole.v.bytes.size()), o2(whole.v.bytes.size()), pool = DeviceBuffer::from(whole.pool);
  KdaPrefillCase one = whole;
  one.initial_slot = {-1}, one.final_slot = {0}, one.checkpoints = {};
  kda_prefill(one.args(Device::Cuda, q.data(), k.data(), v.data(), f.data(), b.data(), o1.data(),
                       pool.as<float>(), a_log.as<float>(), dt.as<float>()));
  for (auto [begin, end, init] : {std::tuple<int64_t, int64_t, int32_t>{0, 96, -1}, {96, 250, 1}}) {
    KdaPrefillCase part = whole;
    part.cu_seqlens = {0, end - begin};
    part.initial_slot = {init}, part.final_slot = {1}, part.checkpoints = {};
    const int64_t es = int64_t(dtype_size(whole.q.dtype)), P = whole.H * whole.K;
    auto at = [&](const DeviceBuffer& d, int64_t cols) {
      return static_cast<uint8_t*>(d.data()) + begin * cols * es;
    };
    part.q.rows = part.k.rows = part.v.rows = part.f.rows = part.b.rows = end - begin;
    kda_prefill(part.args(Device::Cuda, at(q, P), at(k, P), at(v, P), at(f, P), at(b, whole.H), at(o2, P),
                          pool.as<float>(), a_log.as<float>(), dt.as<float>()));
  }
  const std::vector<float> p = pool.to_host<float>();
  const int64_t S = whole.state_size();
  const double ds = test::rel_l2(p.data() + S, p.data(), size_t(S));
  HostTensor h1 = HostTensor::make(whole.v.dtype, whole.v.rows, whole.v.cols), h2 = h1;
  h1.bytes = o1.to_host<uint8_t>(), h2.bytes = o2.to_host<uint8_t>();
  const std::vector<float> f1 = h1.to_f32(), f2 = h2.to_f32();
  const double dout = test::rel_l2(f2.data(), f1.data(), f1.size());
  std::printf("[kda_prefill split] rel L2 difference o %.3e, state %.3e\n", dout, ds);
  EXPECT_LT(dout, kPrefillTol);
  EXPECT_LT(ds, kPrefillTol);
}

// The raw bytes of o and the whole pool after one call (for bit-identity checks between forms).
std::pair<std::vector<uint8_t>, std::vector<float>> run_prefill_bits(const KdaPrefillCase& c) {
  DeviceBuffer q = upload(c.q), k = upload(c.k), v = upload(c.v), f = upload(c.f), b = upload(c.b);
  DeviceBuffer o(c.v.bytes.size());
  o.fill_bytes(0xff);
  DeviceBuffer pool = DeviceBuffer::from(c.pool), a_log = DeviceBuffer::from(c.a_log),
               dt = DeviceBuffer::from(c.dt_bias);
  kda_prefill(c.args(Device::Cuda, q.data(), k.data(), v.data(), f.data(), b.data(), o.data(),
                     pool.as<float>(), a_log.as<float>(), dt.as<float>()));
  cuda::check(cudaDeviceSynchronize(), "kda_prefill");
  return {o.to_host<uint8_t>(), pool.to_host<float>()};
}

// The call cut into segments (prep of segment s + 1 overlapping the recurrence of segment s, the
// state carried through each sequence's final slot) gives the same bits as one segment, and both
// match the oracle.
TEST_F(KdaCuda, PrefillSegmentsGiveIdenticalBits) {
  for (std::optional<float> lb : {std::optional<float>(-5.0f), std::optional<float>()}) {
    const KdaPrefillCase c = KdaPrefillCase::make({700, 0, 37, 333}, 2, 128, lb, DType::BF16, 43, 64);
    std::vector<uint8_t> o_ref;
    std::vector<float> pool_ref;
    // {segments, shared memory reserved per recurrence CTA in KB (DS_KDA_K2_RESERVE_KB)}
    for (auto [segments, reserve_kb] : {std::pair<const char*, const char*>{"1", "0"},
                                        {"5", "0"},
                                        {"64", "0"},
                                        {"5", "100"},
                                        {"5", "200"}}) {
      setenv("DS_KDA_SEGMENTS", segments, 1);
      setenv("DS_KDA_K2_RESERVE_KB", reserve_kb, 1);
      const auto [got_o, got_pool] = run_prefill_bits(c);
      unsetenv("DS_KDA_K2_RESERVE_KB");
      if (o_ref.empty()) {
        o_ref = got_o, pool_ref = got_pool;
        continue;
      }
      const std::string what = std::string(segments) + " segments, " + reserve_kb + " KB reserved";
      EXPECT_EQ(got_o, o_ref) << what;
      EXPECT_EQ(std::memcmp(got_pool.data(), pool_ref.data(), pool_ref.size() * sizeof(float)), 0) << what;
    }
    setenv("DS_KDA_SEGMENTS", "3", 1);
    expect_prefill(c, lb ? "safe, 3 segments" : "softplus, 3 segments");
    unsetenv("DS_KDA_SEGMENTS");
  }
}

// The recurrence's pipeline depth (env DS_KDA_K2_STAGES) changes only when loads are issued, and
// its CTA width (DS_KDA_K2_WARPS) only which CTA a warp sits in: the same bits for every depth and
// width of one recurrence form (DS_KDA_K2_SPLIT: key-split or whole-key warps), for bf16 and f32
// activations (different stage sizes).
TEST_F(KdaCuda, PrefillPipelineDepthGivesIdenticalBits) {
  for (DType dt_act : {DType::BF16, DType::F32}) {
    const KdaPrefillCase c = KdaPrefillCase::make({300, 1, 77}, 3, 128, -5.0f, dt_act, 44, 64);
    // {chained form (DS_KDA_CHAIN), key split}: the segment form's two recurrences and the chained one
    for (auto [chain, split] : {std::pair<const char*, const char*>{"0", "1"}, {"0", "0"}, {"1", "0"}}) {
      setenv("DS_KDA_CHAIN", chain, 1);
      setenv("DS_KDA_K2_SPLIT", split, 1);
      std::vector<uint8_t> o_ref;
      std::vector<float> pool_ref;
      for (const char* warps : {"4", "8", "2"})
        for (const char* stages : {"3", "2", "5", "8"}) {
          setenv("DS_KDA_K2_WARPS", warps, 1);
          setenv("DS_KDA_K2_STAGES", stages, 1);
          const auto [got_o, got_pool] = run_prefill_bits(c);
          if (o_ref.empty()) {
            o_ref = got_o, pool_ref = got_pool;
            continue;
          }
          const std::string what = std::string("chain ") + chain + ", split " + split + ", " + warps +
                                   " warps, " + stages + " stages";
          EXPECT_EQ(got_o, o_ref) << what;
          EXPECT_EQ(std::memcmp(got_pool.data(), pool_ref.data(), pool_ref.size() * sizeof(float)), 0)
              << what;
        }
      unsetenv("DS_KDA_K2_WARPS");
      setenv("DS_KDA_K2_STAGES", "6", 1);
      expect_prefill(c, dt_act == DType::F32 ? "f32, 6 stages" : "bf16, 6 stages");
      unsetenv("DS_KDA_K2_STAGES");
    }
    unsetenv("DS_KDA_K2_SPLIT");
    unsetenv("DS_KDA_CHAIN");
  }
}

// The chained form (prep and recurrence side by side, the recurrence waiting on per-window counters,
// DS_KDA_CHAIN=1) gives the bits of the one-segment form with the same (whole-key) recurrence, for
// every window size (1 chunk, 4, 16, the whole call), prep CTAs of 3 chunks (straddling windows),
// every shared-memory reservation (200 / 100 / 0 KB per recurrence CTA), and matches the oracle on
// awkward lengths, the steep softplus decay, f32 activations and many heads.
TEST_F(KdaCuda, PrefillChainedGivesOneSegmentBits) {
  struct Case {
    KdaPrefillCase c;
    const char* name;
  };
  const Case cases[] = {
      {KdaPrefillCase::make({37, 1, 64, 0, 100, 17}, 4, 128, -5.0f, DType::BF16, 21, 16),
       "chained safe/awkward"},
      {KdaPrefillCase::make({77, 5, 300}, 4, 128, std::nullopt, DType::BF16, 22, 32, true),
       "chained softplus/steep"},
      {KdaPrefillCase::make({50, 129}, 2, 128, std::nullopt, DType::F32, 24, 48), "chained f32"},
      {KdaPrefillCase::make({700, 45}, 32, 128, std::nullopt, DType::BF16, 25, 64), "chained H32"},
      {KdaPrefillCase::make({600}, 96, 128, -5.0f, DType::BF16, 26, 128), "chained H96"},
  };
  for (const Case& k : cases) {
    setenv("DS_KDA_CHAIN", "0", 1);
    setenv("DS_KDA_SEGMENTS", "1", 1);
    setenv("DS_KDA_K2_SPLIT", "0", 1);
    const auto [o_ref, pool_ref] = run_prefill_bits(k.c);
    unsetenv("DS_KDA_SEGMENTS");
    unsetenv("DS_KDA_K2_SPLIT");
    setenv("DS_KDA_CHAIN", "1", 1);
    for (const char* shift : {"4", "0", "2", "12"})
      for (const char* reserve : {"", "200", "100", "0"}) {
        setenv("DS_KDA_CHAIN_SHIFT", shift, 1);
        if (*reserve) setenv("DS_KDA_K2_RESERVE_KB", reserve, 1);
        if (std::string(shift) == "2") setenv("DS_KDA_PREP_CHUNKS", "3", 1);
        const auto [got_o, got_pool] = run_prefill_bits(k.c);
        unsetenv("DS_KDA_K2_RESERVE_KB");
        unsetenv("DS_KDA_PREP_CHUNKS");
        const std::string what = std::string(k.name) + ", window 2^" + shift + ", reserve " + reserve;
        EXPECT_EQ(got_o, o_ref) << what;
        EXPECT_EQ(std::memcmp(got_pool.data(), pool_ref.data(), pool_ref.size() * sizeof(float)), 0) << what;
      }
    unsetenv("DS_KDA_CHAIN_SHIFT");
    expect_prefill(k.c, k.name);
    unsetenv("DS_KDA_CHAIN");
  }
}

// The recurrence form not taken by default (whole-key warps, DS_KDA_K2_SPLIT=0; every other test
// runs the key-split form) against the oracle on awkward lengths, the steep softplus decay, f32
// activations, many heads, and checkpoints off the chunk grid.
TEST_F(KdaCuda, PrefillWholeKeyRecurrenceMatchesOracle) {
  setenv("DS_KDA_CHAIN", "0", 1);  // the segment form's (the chained form is whole-key anyway)
  setenv("DS_KDA_K2_SPLIT", "0", 1);
  expect_prefill(KdaPrefillCase::make({37, 1, 64, 0, 100, 17}, 4, 128, -5.0f, DType::BF16, 21, 16),
                 "whole-key safe/awkward");
  expect_prefill(KdaPrefillCase::make({77, 5, 300}, 4, 128, std::nullopt, DType::BF16, 22, 32, true),
                 "whole-key softplus/steep");
  expect_prefill(KdaPrefillCase::make({50, 129}, 2, 128, std::nullopt, DType::F32, 24, 48), "whole-key f32");
  expect_prefill(KdaPrefillCase::make({300, 45}, 32, 128, std::nullopt, DType::BF16, 25, 64),
                 "whole-key H32");
  expect_prefill(KdaPrefillCase::make({300, 45, 0, 129, 7}, 2, 128, -5.0f, DType::BF16, 45, 37),
                 "whole-key every 37");
  unsetenv("DS_KDA_K2_SPLIT");
  unsetenv("DS_KDA_CHAIN");
}

void expect_decode(const KdaDecodeCase& c, const char* name) {
  DeviceBuffer q = upload(c.q), k = upload(c.k), v = upload(c.v), f = upload(c.f), b = upload(c.b),
               r = upload(c.r);
  DeviceBuffer y(c.r.bytes.size());
  y.fill_bytes(0xff);
  DeviceBuffer pool = DeviceBuffer::from(c.pool), conv = DeviceBuffer::from(c.conv);
  DeviceBuffer taps = DeviceBuffer::from(c.taps), norm = DeviceBuffer::from(c.o_norm);
  DeviceBuffer a_log = DeviceBuffer::from(c.a_log), dt = DeviceBuffer::from(c.dt_bias);
  DeviceBuffer slots = DeviceBuffer::from(c.slots);
  kda_decode(c.args(Device::Cuda, q.data(), k.data(), v.data(), f.data(), b.data(), r.data(), y.data(),
                    pool.as<float>(), conv.as<float>(), taps.as<float>(), norm.as<float>(), a_log.as<float>(),
                    dt.as<float>(), slots.as<int32_t>()));
  cuda::check(cudaDeviceSynchronize(), "kda_decode test");
  HostTensor got = HostTensor::make(c.r.dtype, c.r.rows, c.r.cols);
  got.bytes = y.to_host<uint8_t>();
  const std::vector<float> got_y = got.to_f32(), got_pool = pool.to_host<float>(),
                           got_conv = conv.to_host<float>();
  std::vector<float> want_y, want_pool, want_conv;
  c.reference(want_y, want_pool, want_conv);
  const double ey = test::rel_l2(got_y.data(), want_y.data(), want_y.size());
  const double es = test::rel_l2(got_pool.data(), want_pool.data(), want_pool.size());
  const double ec = test::max_abs_diff(got_conv.data(), want_conv.data(), want_conv.size());
  std::printf("[kda_decode %s] B=%lld H=%lld: rel L2 error y %.3e, states %.3e; conv max |d| %.1e\n", name,
              (long long)c.B, (long long)c.H, ey, es, ec);
  const bool bf16 = c.q.dtype == DType::BF16;
  EXPECT_LT(ey, bf16 ? 4e-3 : 1e-5) << name;
  EXPECT_LT(es, 1e-5) << name;
  EXPECT_EQ(ec, 0.0) << name;  // the window update is a copy
}

TEST_F(KdaCuda, DecodeMatchesCpu) {
  expect_decode(KdaDecodeCase::make(1, 4, 128, std::nullopt, DType::BF16, 31), "softplus bf16 B1");
  expect_decode(KdaDecodeCase::make(7, 4, 128, -5.0f, DType::F32, 32), "safe f32 B7");
  expect_decode(KdaDecodeCase::make(64, 32, 128, std::nullopt, DType::BF16, 33), "softplus bf16 B64 H32");
  expect_decode(KdaDecodeCase::make(3, 96, 128, -5.0f, DType::BF16, 34), "safe bf16 B3 H96");
}

// Every decode form (env DS_KDA_DECODE, kernels/cuda/kda_launch.h) computes the same function
// (auto-pdl: the cluster form for B1 H32 and B5 H8, the column form for the others).
TEST_F(KdaCuda, DecodeFormsMatchCpu) {
  for (const char* form : {"rows", "cols", "cols-smem4", "cols-smem5", "cols-pf", "cols-smem5-pf", "cols-hf",
                           "cols-smem5-pf-hf", "cols-hf-pdl", "cl4", "cl4-pdl", "auto-pdl"}) {
    setenv("DS_KDA_DECODE", form, 1);
    const std::string f = form;
    expect_decode(KdaDecodeCase::make(1, 32, 128, std::nullopt, DType::BF16, 44),
                  (f + " softplus bf16 B1 H32").c_str());
    expect_decode(KdaDecodeCase::make(64, 32, 128, std::nullopt, DType::BF16, 41),
                  (f + " softplus bf16 B64").c_str());
    expect_decode(KdaDecodeCase::make(5, 8, 128, -5.0f, DType::F32, 42), (f + " safe f32 B5 H8").c_str());
    expect_decode(KdaDecodeCase::make(2, 96, 128, std::nullopt, DType::F32, 43),
                  (f + " softplus f32 B2 H96").c_str());
  }
  unsetenv("DS_KDA_DECODE");
}

// Three decode steps queued back to back on one stream, as programmatic dependent launches where
// the form has them: step 2 on the slots step 1 has just written (no overlap allowed: it must read
// step 1's states and windows), step 3 on other slots with overlap_prior_kernel (it may load its
// states while step 2 runs). Each step's y, and the pools at the end, match three CPU steps.
TEST_F(KdaCuda, DecodeStepsBackToBackOnAStream) {
  for (const char* form : {"cols-hf-pdl", "cols-hf", "rows", "cl4-pdl", "cl4"}) {
    setenv("DS_KDA_DECODE", form, 1);
    const KdaDecodeCase c = KdaDecodeCase::make(64, 32, 128, std::nullopt, DType::BF16, 51);
    std::vector<int32_t> other;  // B slots that step 1 does not touch
    for (int32_t i = 0; i < int32_t(c.n_slots) && int64_t(other.size()) < c.B; ++i)
      if (std::find(c.slots.begin(), c.slots.end(), i) == c.slots.end()) other.push_back(i);
    KdaDecodeCase c3 = c;
    c3.slots = other;

    DeviceBuffer q = upload(c.q), k = upload(c.k), v = upload(c.v), f = upload(c.f), b = upload(c.b),
                 r = upload(c.r);
    DeviceBuffer pool = DeviceBuffer::from(c.pool), conv = DeviceBuffer::from(c.conv);
    DeviceBuffer taps = DeviceBuffer::from(c.taps), norm = DeviceBuffer::from(c.o_norm);
    DeviceBuffer a_log = DeviceBuffer::from(c.a_log), dt = DeviceBuffer::from(c.dt_bias);
    DeviceBuffer slots1 = DeviceBuffer::from(c.slots), slots3 = DeviceBuffer::from(c3.slots);
    DeviceBuffer y[3] = {DeviceBuffer(c.r.bytes.size()), DeviceBuffer(c.r.bytes.size()),
                         DeviceBuffer(c.r.bytes.size())};
    cudaStream_t stream = nullptr;
    cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    for (int step = 0; step < 3; ++step) {
      const DeviceBuffer& sl = step == 2 ? slots3 : slots1;
      KdaDecodeArgs a = c.args(Device::Cuda, q.data(), k.data(), v.data(), f.data(), b.data(), r.data(),
                               y[step].data(), pool.as<float>(), conv.as<float>(), taps.as<float>(),
                               norm.as<float>(), a_log.as<float>(), dt.as<float>(), sl.as<int32_t>());
      a.stream = stream;
      a.overlap_prior_kernel = step == 2;
      kda_decode(a);
    }
    cuda::check(cudaStreamSynchronize(stream), "kda_decode steps");
    cuda::check(cudaStreamDestroy(stream), "stream");

    // The same three steps on the CPU.
    KdaDecodeCase cs = c;
    std::vector<float> want_y[3];
    for (int step = 0; step < 3; ++step) {
      if (step == 2) cs.slots = c3.slots;
      std::vector<float> pool_out, conv_out;
      cs.reference(want_y[step], pool_out, conv_out);
      cs.pool = std::move(pool_out), cs.conv = std::move(conv_out);
    }
    const std::string name = std::string(form) + " back to back";
    for (int step = 0; step < 3; ++step) {
      HostTensor got = HostTensor::make(c.r.dtype, c.r.rows, c.r.cols);
      got.bytes = y[step].to_host<uint8_t>();
      const std::vector<float> got_y = got.to_f32();
      const double ey = test::rel_l2(got_y.data(), want_y[step].data(), want_y[step].size());
      std::printf("[kda_decode %s] step %d: rel L2 error y %.3e\n", name.c_str(), step + 1, ey);
      EXPECT_LT(ey, 4e-3) << name << " step " << step + 1;
    }
    const std::vector<float> got_pool = pool.to_host<float>(), got_conv = conv.to_host<float>();
    const double es = test::rel_l2(got_pool.data(), cs.pool.data(), cs.pool.size());
    const double ec = test::max_abs_diff(got_conv.data(), cs.conv.data(), cs.conv.size());
    std::printf("[kda_decode %s] states %.3e, conv max |d| %.1e\n", name.c_str(), es, ec);
    EXPECT_LT(es, 1e-5) << name;
    EXPECT_EQ(ec, 0.0) << name;
  }
  unsetenv("DS_KDA_DECODE");
}

}  // namespace
}  // namespace ds
