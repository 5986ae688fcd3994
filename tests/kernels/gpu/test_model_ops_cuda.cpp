// The device-forward kernels (elementwise.h, gather.h, mla_attention.h, attn_res.h, the batched
// short conv, the exact KDA prefill, the MXFP4 expert GEMM) on CUDA against their CPU
// implementations on the same random inputs. ctest label "gpu"; skipped without a CUDA device. All
// f32: results agree to rounding (relative L2 <= 1e-5; index moves and copies exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/attn_res.h"
#include "kernels/elementwise.h"
#include "kernels/expert_linear.h"
#include "kernels/gather.h"
#include "kernels/kda.h"
#include "kernels/memory.h"
#include "kernels/mla_attention.h"
#include "kernels/norm.h"
#include "kernels/short_conv.h"

namespace ds {
namespace {

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i)
    num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / std::max(den, 1e-30));
}

// The same values on the host and on the GPU.
struct Twin {
  std::vector<uint8_t> host;
  Buffer dev;
  DType dt = DType::F32;
  int64_t rows = 0, cols = 0;

  template <class T>
  static Twin of(const std::vector<T>& v, DType dt, int64_t rows, int64_t cols) {
    Twin t;
    t.dt = dt, t.rows = rows, t.cols = cols;
    t.host.resize(v.size() * sizeof(T));
    std::memcpy(t.host.data(), v.data(), t.host.size());
    t.dev = Buffer::from_host<uint8_t>(Device::Cuda, t.host);
    return t;
  }
  static Twin randn(int64_t rows, int64_t cols, uint32_t seed, float sd = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, sd);
    std::vector<float> v(size_t(rows * cols));
    for (float& x : v) x = n(rng);
    return of(v, DType::F32, rows, cols);
  }
  void* ptr(Device d) const { return d == Device::Cpu ? const_cast<uint8_t*>(host.data()) : dev.data(); }
  TensorView view(Device d) const { return TensorView::matrix(ptr(d), dt, rows, cols, -1, d); }
  TensorView flat(Device d) const { return TensorView::contiguous(ptr(d), dt, {rows * cols}, d); }
  std::vector<float> cpu_f32() const {
    std::vector<float> v(host.size() / 4);
    std::memcpy(v.data(), host.data(), host.size());
    return v;
  }
  std::vector<float> gpu_f32() const { return dev.to_host<float>(); }
};

class ModelOpsCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

void expect_same(const Twin& t, double tol, const char* what) {
  const double e = rel_l2(t.gpu_f32(), t.cpu_f32());
  EXPECT_LE(e, tol) << what;
  std::printf("    rel L2 %-28s %.3g\n", what, e);
}

// The residual add with the next RMSNorm in one pass (Kimi's hidden width, 1 and 5 rows; a width
// that takes the two-kernel fallback), against add_rows + rmsnorm on the CPU: both outputs.
TEST_F(ModelOpsCuda, AddRmsNormMatchesCpu) {
  for (const auto [rows, dim] : {std::pair<int64_t, int64_t>{1, 2304}, {5, 2304}, {3, 70}}) {
    const Twin r = Twin::randn(rows, dim, 60), w = Twin::randn(1, dim, 61);
    Twin x = Twin::randn(rows, dim, 62), y = Twin::randn(rows, dim, 63);
    for (Device d : {Device::Cpu, Device::Cuda})
      add_rmsnorm(r.view(d), x.view(d), w.flat(d), 1e-6f, y.view(d));
    expect_same(x, 1e-7, "add_rmsnorm x");
    expect_same(y, 1e-6, "add_rmsnorm y");
  }
}

// The paged latents and attention arguments of the MLA tests (Kimi layout: q_pe the last dr of
// each head's dq query columns, scale 1/sqrt(dq)).
MlaPagedLatents paged_latents(Device d, const Twin& pool, int64_t n_pages, int64_t P, int64_t R, int64_t dr,
                              const Twin& table, const Twin& offset, const Twin& seq, const Twin& pos) {
  MlaPagedLatents p;
  p.pool = static_cast<float*>(pool.ptr(d)), p.n_pages = n_pages, p.page_tokens = P, p.R = R, p.dr = dr;
  p.page_table = table.flat(d), p.page_offset = offset.flat(d), p.tok_seq = seq.flat(d),
  p.tok_pos = pos.flat(d);
  p.device = d;
  return p;
}
MlaAttentionArgs attention_args(Device d, int64_t H, const Twin& qhat, const Twin& q, int64_t dq, int64_t dr,
                                const Twin& ctx) {
  MlaAttentionArgs a;
  a.H = H, a.q_hat = qhat.view(d), a.q_pe = q.view(d), a.q_pe_col = dq - dr, a.q_pe_head_stride = dq;
  a.scale = 1.0f / std::sqrt(float(dq)), a.ctx = ctx.view(d);
  return a;
}

TEST_F(ModelOpsCuda, ElementwiseRows) {
  const Twin x = Twin::randn(7, 33, 1), g = Twin::randn(7, 33, 2);
  Twin y = Twin::randn(7, 33, 3), s = Twin::randn(7, 33, 4);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    add_rows(x.view(d), y.view(d));
    mul_sigmoid_rows(g.view(d), y.view(d));
    situ_mul_rows(x.view(d), g.view(d), s.view(d), 4.0f, 25.0f);
  }
  expect_same(y, 1e-6, "add + mul_sigmoid");
  expect_same(s, 1e-6, "situ_mul");
  Twin b = Twin::of(std::vector<uint16_t>(7 * 33), DType::BF16, 7, 33), back = Twin::randn(7, 33, 5);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    cast_rows(x.view(d), b.view(d));
    cast_rows(b.view(d), back.view(d));
  }
  EXPECT_EQ(back.gpu_f32(), back.cpu_f32()) << "f32 -> bf16 -> f32 rounds identically";
  // 36 columns: the four-column f32 -> bf16 kernel.
  const Twin x4 = Twin::randn(5, 36, 6);
  Twin b4 = Twin::of(std::vector<uint16_t>(5 * 36), DType::BF16, 5, 36), back4 = Twin::randn(5, 36, 7);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    cast_rows(x4.view(d), b4.view(d));
    cast_rows(b4.view(d), back4.view(d));
  }
  EXPECT_EQ(back4.gpu_f32(), back4.cpu_f32()) << "four-column f32 -> bf16 rounds identically";
}

TEST_F(ModelOpsCuda, GathersAndCombine) {
  std::vector<uint16_t> tbl(50 * 24);
  std::mt19937 rng(7);
  for (auto& v : tbl) v = f32_to_bf16(std::normal_distribution<float>()(rng));
  const Twin table = Twin::of(tbl, DType::BF16, 50, 24);
  const Twin ids = Twin::of(std::vector<int32_t>{3, 49, 0, 3, 17}, DType::I32, 5, 1);
  Twin emb = Twin::randn(5, 24, 8), rows = Twin::randn(9, 24, 9), out = Twin::randn(5, 24, 10);
  const Twin idx = Twin::of(std::vector<int32_t>{4, 0, 2, 2, 1, 3, 0, 4, 1}, DType::I32, 9, 1);
  const Twin pos = Twin::of(std::vector<int32_t>{0, 5, 1, 6, 2, 3, 4, 7, 8, 0}, DType::I32, 5, 2);
  const Twin w = Twin::randn(5, 2, 11);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    embedding_rows(WeightView{table.ptr(d), DType::BF16, 50, 24, d}, ids.flat(d), emb.view(d));
    gather_rows(emb.view(d), idx.flat(d), rows.view(d));
    weighted_combine_rows(rows.view(d), pos.view(d), w.flat(d), out.view(d));
  }
  EXPECT_EQ(emb.gpu_f32(), emb.cpu_f32());
  EXPECT_EQ(rows.gpu_f32(), rows.cpu_f32());
  expect_same(out, 1e-6, "weighted_combine");
  // 22 of the 24 columns (not a multiple of 4: the one-column-per-thread kernel, not the float4 one).
  Twin out22 = Twin::randn(5, 24, 12);
  for (Device d : {Device::Cpu, Device::Cuda})
    weighted_combine_rows(TensorView::matrix(rows.ptr(d), DType::F32, 9, 22, 24, d), pos.view(d), w.flat(d),
                          TensorView::matrix(out22.ptr(d), DType::F32, 5, 22, 24, d));
  expect_same(out22, 1e-6, "weighted_combine, 22 columns");
}

// Two sequences with scattered pages (page_tokens 4): 3 new tokens after 9 cached, 5 from scratch.
TEST_F(ModelOpsCuda, MlaPagedWriteAndAttention) {
  const int64_t P = 4, R = 32, dr = 8, H = 3, dq = 20, n_pages = 12;
  Twin pool = Twin::randn(n_pages * P, R + dr, 20);
  const Twin table = Twin::of(std::vector<int32_t>{7, 2, 10, 0, 5, 11}, DType::I32, 6, 1);
  const Twin offset = Twin::of(std::vector<int32_t>{0, 3}, DType::I32, 2, 1);
  const Twin seq = Twin::of(std::vector<int32_t>{0, 0, 0, 1, 1, 1, 1, 1}, DType::I32, 8, 1);
  const Twin pos = Twin::of(std::vector<int32_t>{9, 10, 11, 0, 1, 2, 3, 4}, DType::I32, 8, 1);
  const Twin c = Twin::randn(8, R, 21), kpe = Twin::randn(8, dr, 22);
  const Twin qhat = Twin::randn(8, H * R, 23, 0.3f), q = Twin::randn(8, H * dq, 24, 0.3f);
  Twin ctx = Twin::randn(8, H * R, 25);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    MlaPagedLatents p;
    p.pool = static_cast<float*>(pool.ptr(d)), p.n_pages = n_pages, p.page_tokens = P, p.R = R, p.dr = dr;
    p.page_table = table.flat(d), p.page_offset = offset.flat(d), p.tok_seq = seq.flat(d),
    p.tok_pos = pos.flat(d);
    p.device = d;
    mla_write_latents(p, c.view(d), kpe.view(d));
    MlaAttentionArgs a;
    a.H = H, a.q_hat = qhat.view(d), a.q_pe = q.view(d), a.q_pe_col = dq - dr, a.q_pe_head_stride = dq;
    a.scale = 0.2f, a.ctx = ctx.view(d);
    mla_attention(p, a);
  }
  EXPECT_EQ(pool.gpu_f32(), pool.cpu_f32());
  expect_same(ctx, 1e-5, "mla_attention");
}

// Kimi Linear's MLA shape (32 heads, R = 512, dr = 64) over long scattered contexts: decode tokens
// (the context split over many CTAs) and a 300-token prompt (one CTA per token) against the CPU.
TEST_F(ModelOpsCuda, MlaAttentionKimiShapeSplitContext) {
  const int64_t P = 16, R = 512, dr = 64, H = 32, dq = 192, n_pages = 80;
  Twin pool = Twin::randn(n_pages * P, R + dr, 30);
  std::vector<int32_t> table;
  for (int32_t p = 0; p < 60; ++p) table.push_back((p * 37) % n_pages);  // seq 0: 60 pages, seq 1: 20
  for (int32_t p = 0; p < 20; ++p) table.push_back((p * 37 + 3) % n_pages);
  const Twin tab = Twin::of(table, DType::I32, int64_t(table.size()), 1);
  const Twin offset = Twin::of(std::vector<int32_t>{0, 60}, DType::I32, 2, 1);
  for (const bool prompt : {false, true}) {
    std::vector<int32_t> seq_h, pos_h;
    if (prompt)
      for (int32_t t = 0; t < 300; ++t) seq_h.push_back(1), pos_h.push_back(t);
    else
      seq_h = {0, 1}, pos_h = {957, 311};
    const int64_t T = int64_t(seq_h.size());
    const Twin seq = Twin::of(seq_h, DType::I32, T, 1), pos = Twin::of(pos_h, DType::I32, T, 1);
    const Twin qhat = Twin::randn(T, H * R, 31, 0.05f), q = Twin::randn(T, H * dq, 32, 0.05f);
    Twin ctx = Twin::randn(T, H * R, 33);
    for (Device d : {Device::Cpu, Device::Cuda}) {
      const MlaPagedLatents p = paged_latents(d, pool, n_pages, P, R, dr, tab, offset, seq, pos);
      const MlaAttentionArgs a = attention_args(d, H, qhat, q, dq, dr, ctx);
      mla_attention(p, a);
    }
    expect_same(ctx, 1e-5,
                prompt ? "mla_attention Kimi shape, 300-token prompt" : "mla_attention Kimi shape, decode");
  }
}

// The tensor-core absorbed attention (bf16_products) against the CPU's f32 one: Kimi's shape (32
// heads, R = 512, dr = 64), K3's 96 heads (3 head groups) and the tiny model's (4 heads, R = 128, dr = 32);
// one decode token (128 context splits, most of them empty at 1-33 positions), 3 tokens of different lengths
// (44 splits each), and 140 tokens (one CTA per token, no merge); positions on scattered pages.
TEST_F(ModelOpsCuda, MlaAttentionMmaMatchesCpu) {
  struct Shape {
    int64_t H, R, dr, dq;
  };
  for (const Shape sh : {Shape{32, 512, 64, 192}, Shape{96, 512, 64, 192}, Shape{4, 128, 32, 96}}) {
    const int64_t P = 16, n_pages = 420;
    Twin pool = Twin::randn(n_pages * P, sh.R + sh.dr, 70);
    std::vector<int32_t> table;
    for (int32_t p = 0; p < 400; ++p) table.push_back((p * 37 + 5) % n_pages);  // seq 0: 400 pages, seq 1: 20
    for (int32_t p = 0; p < 20; ++p) table.push_back((p * 41 + 3) % n_pages);
    const Twin tab = Twin::of(table, DType::I32, int64_t(table.size()), 1);
    const Twin offset = Twin::of(std::vector<int32_t>{0, 400}, DType::I32, 2, 1);
    const std::vector<std::vector<std::pair<int32_t, int32_t>>> cases = {
        {{0, 0}}, {{1, 31}}, {{0, 32}}, {{1, 300}}, {{0, 6399}}, {{0, 4000}, {1, 7}, {1, 250}}, {}};
    for (size_t c = 0; c < cases.size(); ++c) {
      if (sh.H > 32 && cases[c].empty()) continue;  // the CPU reference of 140 tokens x 96 heads: too slow
      std::vector<int32_t> seq_h, pos_h;
      for (const auto& [sq, ps] : cases[c]) seq_h.push_back(sq), pos_h.push_back(ps);
      if (cases[c].empty())
        for (int32_t t = 0; t < 140; ++t) seq_h.push_back(t % 2), pos_h.push_back(t % 2 ? 319 - t : 6000 + t);
      const int64_t T = int64_t(seq_h.size());
      const Twin seq = Twin::of(seq_h, DType::I32, T, 1), pos = Twin::of(pos_h, DType::I32, T, 1);
      const Twin qhat = Twin::randn(T, sh.H * sh.R, 71 + uint32_t(c), 0.3f);
      const Twin q = Twin::randn(T, sh.H * sh.dq, 81 + uint32_t(c), 0.3f);
      Twin ctx = Twin::randn(T, sh.H * sh.R, 91);
      for (Device d : {Device::Cpu, Device::Cuda}) {
        const MlaPagedLatents p = paged_latents(d, pool, n_pages, P, sh.R, sh.dr, tab, offset, seq, pos);
        MlaAttentionArgs a = attention_args(d, sh.H, qhat, q, sh.dq, sh.dr, ctx);
        a.bf16_products = true;
        mla_attention(p, a);
      }
      expect_same(ctx, 1e-2, "mla_attention bf16 tensor cores");
    }
  }
}

// One sequence's chunk of T tokens after p0 cached ones through mla_attention_dense on both devices
// (Kimi's R = 512, dr = 64, dq = 192; H heads; the sequence's pages from entry page_off of the table),
// the CUDA result against the CPU's f32 absorbed attention.
void check_dense_chunk(const Twin& pool, int64_t n_pages, const Twin& tab, const Twin& offset,
                       int64_t page_off, int64_t H, int64_t p0, int64_t T, int64_t scratch, uint32_t seed,
                       const char* what) {
  const int64_t P = 16, R = 512, dr = 64, dq = 192;
  std::vector<int32_t> seq_h, pos_h;
  for (int64_t t = 0; t < T; ++t) seq_h.push_back(0), pos_h.push_back(int32_t(p0 + t));
  const Twin seq = Twin::of(seq_h, DType::I32, T, 1), pos = Twin::of(pos_h, DType::I32, T, 1);
  const Twin qhat = Twin::randn(T, H * R, seed, 0.3f), q = Twin::randn(T, H * dq, seed + 1, 0.3f);
  Twin ctx = Twin::randn(T, H * R, seed + 2);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    const MlaPagedLatents p = paged_latents(d, pool, n_pages, P, R, dr, tab, offset, seq, pos);
    const MlaAttentionArgs a = attention_args(d, H, qhat, q, dq, dr, ctx);
    mla_attention_dense(p, a, page_off, p0, scratch);
  }
  expect_same(ctx, 1e-2, what);
}

// The tensor-core prefill (bf16 operands) against the CPU's f32 absorbed attention, Kimi shape:
// a chunk after a cached prefix that crosses a query row block, with a scratch so small that every
// head is its own product, and a chunk from position 0 with all heads in one product. The
// sequence's pages start at entry 5 of the table (another sequence's pages first).
TEST_F(ModelOpsCuda, MlaAttentionDenseMatchesCpu) {
  const int64_t n_pages = 90;
  const Twin pool = Twin::randn(n_pages * 16, 512 + 64, 40);
  std::vector<int32_t> table = {1, 2, 3, 4, 5};
  for (int32_t p = 0; p < 80; ++p) table.push_back((p * 37 + 11) % n_pages);
  const Twin tab = Twin::of(table, DType::I32, int64_t(table.size()), 1);
  const Twin offset = Twin::of(std::vector<int32_t>{5}, DType::I32, 1, 1);
  check_dense_chunk(pool, n_pages, tab, offset, 5, 32, 150, 1100, int64_t(4) << 20, 41,
                    "mla_attention_dense after 150");
  check_dense_chunk(pool, n_pages, tab, offset, 5, 32, 0, 300, int64_t(1) << 30, 41,
                    "mla_attention_dense from 0");
}

// Chunks after long cached prefixes (4 heads, a few rows): score rows of 9k, 20k and 33k columns, so
// the softmax runs once per register-resident width (512 x 32, 1024 x 32) and once in two passes.
TEST_F(ModelOpsCuda, MlaAttentionDenseLongPrefixMatchesCpu) {
  const int64_t n_pages = 2100;
  const Twin pool = Twin::randn(n_pages * 16, 512 + 64, 50);
  std::vector<int32_t> table;
  for (int32_t p = 0; p < n_pages; ++p) table.push_back((p * 37 + 11) % n_pages);
  const Twin tab = Twin::of(table, DType::I32, int64_t(table.size()), 1);
  const Twin offset = Twin::of(std::vector<int32_t>{0}, DType::I32, 1, 1);
  for (const int64_t p0 : {9000, 20000, 33000})
    check_dense_chunk(pool, n_pages, tab, offset, 0, 4, p0, 20, int64_t(2) << 30, 51,
                      "mla_attention_dense after a long prefix");
}

TEST_F(ModelOpsCuda, AttnResMixAndTwoPhase) {
  const int64_t T = 5, D = 300;
  const Twin b0 = Twin::randn(T, D, 30), b1 = Twin::randn(T, D, 31), p = Twin::randn(T, D, 32);
  const Twin queries = Twin::randn(3, D, 33, 0.1f);
  Twin mix = Twin::randn(T, D, 34), m = Twin::randn(3, T, 35), s = Twin::randn(3, T, 36);
  Twin o = Twin::randn(3, T * D, 37), h = Twin::randn(T, D, 38), h0 = Twin::randn(T, D, 39);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    const std::vector<TensorView> src{b0.flat(d), b1.flat(d), p.flat(d)}, blocks{b0.flat(d), b1.flat(d)};
    const TensorView q1 = TensorView::contiguous(static_cast<float*>(queries.ptr(d)) + D, DType::F32, {D}, d);
    attn_res_mix(src, q1, 1e-5f, mix.view(d));
    attn_res_block_scores(blocks, queries.view(d), 1e-5f, m.view(d), s.view(d), o.flat(d));
    attn_res_merge(1, m.view(d), s.view(d), o.flat(d), p.flat(d), q1, 1e-5f, h.view(d));
    attn_res_merge(0, m.view(d), s.view(d), o.flat(d),
                   TensorView::contiguous(nullptr, DType::F32, {T * D}, d), q1, 1e-5f, h0.view(d));
  }
  expect_same(mix, 1e-5, "attn_res_mix");
  expect_same(o, 1e-5, "attn_res phase 1 o");
  expect_same(h, 1e-5, "attn_res merge");
  expect_same(h0, 1e-5, "attn_res merge (no partial)");
  // The two forms agree: the merge of query 1 equals the reference mix over [b0, b1, p].
  EXPECT_LE(rel_l2(h.gpu_f32(), mix.gpu_f32()), 1e-5);
}

TEST_F(ModelOpsCuda, ShortConvBatchWithCheckpoints) {
  const int64_t C = 70, W = 4, stride = C * (W - 1) + 6;
  const std::vector<int64_t> cu{0, 5, 6, 46};
  const Twin x = Twin::randn(46, C, 40), taps = Twin::randn(C, W, 41, 0.5f);
  Twin y = Twin::randn(46, C, 42), pool = Twin::randn(8, stride, 43);
  const std::vector<int32_t> slots{2, 0, 5};
  // Checkpoint (2, 6, 1): its window still holds two values from before the step (the slot's).
  const std::vector<KdaCheckpointRequest> cks{{0, 1, 3}, {2, 6, 1}, {2, 3, 17}, {2, 4, 40}};
  for (Device d : {Device::Cpu, Device::Cuda}) {
    ShortConvBatchArgs a;
    a.cu_seqlens = cu, a.x = x.view(d), a.taps = taps.view(d), a.y = y.view(d);
    a.pool = static_cast<float*>(pool.ptr(d)), a.slot_stride = stride, a.n_slots = 8;
    a.slots = slots, a.checkpoints = cks, a.device = d;
    short_conv_batch(a);
  }
  expect_same(y, 1e-6, "short_conv_batch y");
  expect_same(pool, 1e-7, "short_conv_batch windows");
}

TEST_F(ModelOpsCuda, KdaExactPrefillMatchesCpu) {
  const int64_t H = 2, K = 128, P = H * K, T = 40;
  const std::vector<int64_t> cu{0, 7, 40};
  const Twin q = Twin::randn(T, P, 50), k = Twin::randn(T, P, 51), v = Twin::randn(T, P, 52);
  const Twin f = Twin::randn(T, P, 53), b = Twin::randn(T, H, 54);
  const Twin a_log = Twin::of(std::vector<float>{0.5f, 1.5f}, DType::F32, 1, H);
  const Twin dt = Twin::randn(1, P, 55, 0.5f);
  Twin o = Twin::randn(T, P, 56), pool = Twin::randn(5, H * K * K, 57, 0.1f);
  const std::vector<int32_t> init{3, -1}, fin{3, 0};
  const std::vector<KdaCheckpointRequest> cks{{0, 1, 5}, {1, 2, 13}, {1, 4, 33}};
  for (auto lb : {std::optional<float>{}, std::optional<float>{-5.0f}}) {
    for (Device d : {Device::Cpu, Device::Cuda}) {
      KdaPrefillArgs a;
      a.H = H, a.K = K, a.V = K, a.cu_seqlens = cu;
      a.q = q.view(d), a.k = k.view(d), a.v = v.view(d), a.f = f.view(d), a.b = b.view(d), a.o = o.view(d);
      a.gate = {lb, a_log.flat(d), dt.flat(d)};
      a.scale = 1.0f / std::sqrt(float(K));
      a.pool = {static_cast<float*>(pool.ptr(d)), H * K * K, 5, d};
      a.initial_slot = init, a.final_slot = fin, a.checkpoints = cks, a.exact = true;
      kda_prefill(a);
    }
    expect_same(o, 1e-5, lb ? "kda exact o (safe gate)" : "kda exact o (softplus)");
    expect_same(pool, 1e-5, lb ? "kda exact states (safe gate)" : "kda exact states (softplus)");
  }
}

TEST_F(ModelOpsCuda, Mxfp4ExpertLinear) {
  const int64_t rows = 24, cols = 96, T = 5;
  std::mt19937 rng(60);
  std::vector<uint8_t> packed(size_t(rows * cols / 2)), scale(size_t(rows * cols / 32));
  for (auto& p : packed) p = uint8_t(rng());
  for (auto& s : scale) s = uint8_t(120 + rng() % 10);
  const Twin pk = Twin::of(packed, DType::U8, rows, cols / 2),
             sc = Twin::of(scale, DType::U8, rows, cols / 32);
  const Twin x = Twin::randn(T, cols, 61);
  Twin y = Twin::randn(T, rows, 62);
  for (Device d : {Device::Cpu, Device::Cuda})
    expert_linear(x.view(d),
                  Mxfp4View{static_cast<const uint8_t*>(pk.ptr(d)), static_cast<const uint8_t*>(sc.ptr(d)),
                            rows, cols, d},
                  y.view(d));
  expect_same(y, 1e-5, "mxfp4 expert_linear");
}

}  // namespace
}  // namespace ds
