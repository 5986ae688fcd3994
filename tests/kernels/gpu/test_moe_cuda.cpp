// The device-MoE kernels (routing, grouping, grouped and token-major GLU), linear_heads, fill_uniform,
// argmax_rows and StepGraph on CUDA against their CPU implementations on the same inputs. ctest label "gpu";
// skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "core/dtype.h"
#include "kernels/argmax.h"
#include "kernels/elementwise.h"
#include "kernels/graph.h"
#include "kernels/linear.h"
#include "kernels/memory.h"
#include "kernels/moe.h"
#include "kernels/moe_token.h"

namespace ds {
namespace {

class MoeCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i)
    num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / std::max(den, 1e-30));
}

std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Weights f32 -> the bytes of a [rows, cols] matrix of `dt` (F32, or BF16 rounded to nearest even).
std::vector<uint8_t> weight_bytes(const std::vector<float>& wf, DType dt) {
  std::vector<uint8_t> wb(wf.size() * dtype_size(dt));
  for (size_t i = 0; i < wf.size(); ++i) {
    if (dt == DType::F32) {
      std::memcpy(wb.data() + 4 * i, &wf[i], 4);
    } else {
      const uint16_t v = f32_to_bf16(wf[i]);
      std::memcpy(wb.data() + 2 * i, &v, 2);
    }
  }
  return wb;
}

// A host vector and its device copy.
template <class T>
struct Pair {
  std::vector<T> h;
  Buffer d;
  explicit Pair(std::vector<T> v) : h(std::move(v)), d(Buffer::from_host<T>(Device::Cuda, h)) {}
  explicit Pair(size_t n) : Pair(std::vector<T>(n)) {}
  TensorView view(Device dev, std::initializer_list<int64_t> shape, DType dt) {
    return TensorView::contiguous(dev == Device::Cpu ? static_cast<void*>(h.data()) : d.data(), dt, shape,
                                  dev);
  }
  std::vector<T> gpu() const { return d.to_host<T>(); }
};

// Routing of many tokens (random logits, bias, a few exact ties) and the grouping after it: 256 and
// 8 experts (one warp per token, 8 scores per lane), 384 (16 per lane), 1000 and K3's 896 top-16 (32
// per lane), 2000 (the block-wide kernel).
TEST_F(MoeCuda, RouteAndGroupMatchCpu) {
  struct Shape {
    int64_t T, E, k;
  };
  for (const Shape sh : {Shape{67, 256, 8}, Shape{9, 8, 2}, Shape{13, 384, 8}, Shape{7, 1000, 6},
                         Shape{11, 896, 16}, Shape{6, 2000, 6}}) {
    const int64_t T = sh.T, E = sh.E, k = sh.k;
    std::vector<float> lv = randn(size_t(T * E), 1 + uint32_t(E));
    for (int64_t e = 0; e < std::min<int64_t>(16, E); ++e)
      lv[size_t(5 * E + e)] = 0.25f;  // token 5: exact ties
    Pair<float> logits(lv), bias(randn(size_t(E), 2, 0.1f)), weight(size_t(T * k));
    Pair<int32_t> expert(size_t(T * k)), off(size_t(E + 1)), active(size_t(E + 1)), tok(size_t(T * k)),
        pos(size_t(T * k));
    for (Device d : {Device::Cpu, Device::Cuda}) {
      MoeRouteArgs a{
          logits.view(d, {T, E}, DType::F32), bias.view(d, {E}, DType::F32),     int(k), true, 2.446f,
          expert.view(d, {T, k}, DType::I32), weight.view(d, {T, k}, DType::F32)};
      moe_route(a);
      moe_group(a.expert, E,
                {off.view(d, {E + 1}, DType::I32), active.view(d, {E + 1}, DType::I32),
                 tok.view(d, {T * k}, DType::I32), pos.view(d, {T * k}, DType::I32)});
    }
    EXPECT_EQ(expert.gpu(), expert.h) << E << " experts";
    EXPECT_LE(rel_l2(weight.gpu(), weight.h), 1e-6) << E << " experts";
    EXPECT_EQ(off.gpu(), off.h);
    std::vector<int32_t> ga = active.gpu();
    EXPECT_EQ(std::vector<int32_t>(ga.begin(), ga.begin() + 1 + ga[0]),
              std::vector<int32_t>(active.h.begin(), active.h.begin() + 1 + active.h[0]));
    EXPECT_EQ(tok.gpu(), tok.h);
    EXPECT_EQ(pos.gpu(), pos.h);
  }
}

// Grouped GLU with bf16 and f32 weights, groups of 0 to more than one tile of rows.
TEST_F(MoeCuda, GroupedGluMatchesCpu) {
  const int64_t T = 9, k = 2, E = 5, D = 64, I = 48;
  for (DType dt : {DType::F32, DType::BF16}) {
    std::vector<Buffer> dev;
    std::vector<std::vector<uint8_t>> host;
    std::vector<const void*> hp(3 * E), dp(3 * E);
    for (int64_t m = 0; m < 3 * E; ++m) {
      const std::vector<float> f = randn(size_t(I * D), 100 + uint32_t(m), 0.2f);
      std::vector<uint8_t> b(f.size() * dtype_size(dt));
      for (size_t i = 0; i < f.size(); ++i) {
        if (dt == DType::F32)
          std::memcpy(b.data() + 4 * i, &f[i], 4);
        else {
          const uint16_t v = f32_to_bf16(f[i]);
          std::memcpy(b.data() + 2 * i, &v, 2);
        }
      }
      host.push_back(b);
      dev.push_back(Buffer::from_host<uint8_t>(Device::Cuda, host.back()));
      hp[size_t(m)] = host.back().data(), dp[size_t(m)] = dev.back().data();
    }
    const Buffer dtab = Buffer::from_host<const void*>(Device::Cuda, dp);
    // Experts: 0 gets 7 rows (two tiles), 1 none, the rest a few.
    Pair<int32_t> expert(std::vector<int32_t>{0, 2, 0, 3, 0, 4, 0, 2, 0, 3, 0, 4, 0, 2, 3, 4, 2, 3});
    Pair<int32_t> off(size_t(E + 1)), active(size_t(E + 1)), tok(size_t(T * k)), pos(size_t(T * k));
    Pair<float> x(randn(size_t(T * D), 7)), h(size_t(T * k * I)), y(size_t(T * k * D));
    for (Device d : {Device::Cpu, Device::Cuda}) {
      const MoeGroups g{off.view(d, {E + 1}, DType::I32), active.view(d, {E + 1}, DType::I32),
                        tok.view(d, {T * k}, DType::I32), pos.view(d, {T * k}, DType::I32)};
      moe_group(expert.view(d, {T, k}, DType::I32), E, g);
      const GroupedExperts w{
          d == Device::Cpu ? hp.data() : static_cast<const void* const*>(dtab.data()), dt, E, I, D, d};
      const TensorView xv = x.view(d, {T * D}, DType::F32), hv = h.view(d, {T * k * I}, DType::F32),
                       yv = y.view(d, {T * k * D}, DType::F32);
      moe_grouped_glu(TensorView::matrix(xv.data, DType::F32, T, D, -1, d), w, g,
                      TensorView::matrix(hv.data, DType::F32, T * k, I, -1, d),
                      TensorView::matrix(yv.data, DType::F32, T * k, D, -1, d));
    }
    const double e = rel_l2(y.gpu(), y.h);
    std::printf("    rel L2 grouped GLU (%s weights) %.3g\n", dt == DType::BF16 ? "bf16" : "f32", e);
    EXPECT_LE(e, 1e-5);
  }
}

// Token-major GLU: f32 and bf16 weights, 1 / 3 / 8 tokens, with and without the shared expert and
// accumulation; D and I not multiples of the kernels' column blocks or rows per CTA; a token that
// picks one expert twice.
TEST_F(MoeCuda, TokenGluMatchesCpu) {
  const int64_t k = 3, E = 6, D = 584, I = 200;
  for (DType dt : {DType::F32, DType::BF16}) {
    std::vector<Pair<uint8_t>> mats;  // gate, up, down of each expert, then the shared expert's
    std::vector<const void*> hp(3 * E), dp(3 * E);
    for (int64_t m = 0; m < 3 * (E + 1); ++m)
      mats.emplace_back(weight_bytes(randn(size_t(I * D), 300 + uint32_t(m), 0.1f), dt));
    for (int64_t e = 0; e < E; ++e)
      for (int64_t w = 0; w < 3; ++w)
        hp[size_t(w * E + e)] = mats[size_t(3 * e + w)].h.data(),
                          dp[size_t(w * E + e)] = mats[size_t(3 * e + w)].d.data();
    const Buffer dtab = Buffer::from_host<const void*>(Device::Cuda, dp);
    for (int64_t T : {1, 3, 8})
      for (bool shared : {false, true})
        for (bool acc : {false, true}) {
          std::vector<int32_t> ev(size_t(T * k));
          for (size_t i = 0; i < ev.size(); ++i) ev[i] = int32_t((i * 5 + i / 3) % E);
          ev[0] = ev[1];  // token 0: one expert twice
          Pair<int32_t> expert(ev);
          const int64_t ks = k + (shared ? 1 : 0), xs = D + 8;
          Pair<float> x(randn(size_t(T * xs), 310)), wt(randn(size_t(T * k), 311)), h(size_t(T * ks * I)),
              y(randn(size_t(T * D), 312));
          for (Device d : {Device::Cpu, Device::Cuda}) {
            const bool cpu = d == Device::Cpu;
            auto mat = [&](int64_t m, int64_t rows, int64_t cols) {
              return WeightView{cpu ? static_cast<void*>(mats[size_t(m)].h.data()) : mats[size_t(m)].d.data(),
                                dt, rows, cols, d};
            };
            MoeTokenGluArgs a;
            a.x = TensorView::matrix(x.view(d, {T * xs}, DType::F32).data, DType::F32, T, D, xs, d);
            a.expert = expert.view(d, {T, k}, DType::I32);
            a.weight = wt.view(d, {T, k}, DType::F32);
            a.experts = GroupedExperts{
                cpu ? hp.data() : static_cast<const void* const*>(dtab.data()), dt, E, I, D, d};
            if (shared)
              a.shared_gate = mat(3 * E, I, D), a.shared_up = mat(3 * E + 1, I, D),
              a.shared_down = mat(3 * E + 2, D, I);
            a.h = TensorView::matrix(h.view(d, {T * ks * I}, DType::F32).data, DType::F32, T * ks, I, -1, d);
            a.y = y.view(d, {T, D}, DType::F32);
            a.accumulate = acc;
            moe_token_glu(a);
          }
          const double e = rel_l2(y.gpu(), y.h);
          if (T == 8 && shared && !acc)
            std::printf("    rel L2 token GLU (%s weights, 8 tokens) %.3g\n",
                        dt == DType::BF16 ? "bf16" : "f32", e);
          EXPECT_LE(e, 1e-5) << dtype_name(dt) << " T=" << T << " shared=" << shared << " acc=" << acc;
        }
  }
}

// Per-head few-row products (MLA's absorbed W_UKᵀ and W_UV at decode, bf16 W, f32 x): the 48B shape's
// (32 heads; in 128 -> 512: 16 lanes per row; in 512 -> 128: 2 steps of the warp per row) and the tiny
// model's (4 heads, in 64 and 128), 1 and 2 rows, against the CPU linear_heads.
TEST_F(MoeCuda, LinearFewRowsHeadsMatchCpu) {
  struct Shape {
    int64_t H, in, out, sx, sw, sy;
  };
  for (const Shape& sh : {Shape{32, 128, 512, 192, 512 * 128, 512}, Shape{32, 512, 128, 512, 256 * 512, 128},
                          Shape{4, 64, 128, 96, 128 * 64, 128}, Shape{4, 128, 64, 128, 128 * 128, 64}})
    for (int64_t T : {1, 2}) {
      const int64_t xs = sh.H * sh.sx + 8, ys = sh.H * sh.sy;
      Pair<uint8_t> w(weight_bytes(randn(size_t(sh.H * sh.sw), 50, 0.1f), DType::BF16));
      Pair<float> x(randn(size_t(T * xs), 51)), y(size_t(T * ys));
      for (Device d : {Device::Cpu, Device::Cuda}) {
        const TensorView xv = x.view(d, {T * xs}, DType::F32), yv = y.view(d, {T * ys}, DType::F32);
        const WeightView wv{d == Device::Cpu ? static_cast<void*>(w.h.data()) : w.d.data(), DType::BF16,
                            sh.out, sh.in, d};
        const TensorView x0 = TensorView::matrix(xv.data, DType::F32, T, sh.in, xs, d);
        const HeadStrides st{sh.sx, sh.sw, sh.sy};
        ASSERT_TRUE(linear_few_rows_heads_fits(x0, wv, st));
        linear_few_rows_heads(x0, wv, TensorView::matrix(yv.data, DType::F32, T, sh.out, ys, d), sh.H, st);
      }
      const double e = rel_l2(y.gpu(), y.h);
      if (T == 2)
        std::printf("    rel L2 linear_few_rows_heads (%lld heads, %lld -> %lld) %.3g\n", (long long)sh.H,
                    (long long)sh.in, (long long)sh.out, e);
      EXPECT_LE(e, 1e-5) << "H=" << sh.H << " in=" << sh.in << " T=" << T;
    }
}

// Few-row linear (decode projections): f32 and bf16 weights, 1 / 3 / 8 rows of a strided x, with
// and without accumulation, against the CPU linear().
TEST_F(MoeCuda, LinearFewRowsMatchesCpu) {
  // Shapes whose columns end inside a pass of 4 column blocks (520: 3 blocks, 4104: 17; bf16 at 1 and 2
  // rows: the kernel's small form, passes of 9 blocks; 2312: 10 blocks, the small form's shared-memory
  // variant, gemv_async_kernel, which takes rows of up to 16 blocks).
  for (const auto& [out, in, xs] :
       {std::tuple<int64_t, int64_t, int64_t>{300, 520, 528}, {37, 4104, 4104}, {37, 2312, 2320}})
    for (DType dt : {DType::F32, DType::BF16})
      for (int64_t T : {1, 2, 3, 8})
        for (bool acc : {false, true}) {
          const std::vector<float> wf = randn(size_t(out * in), 40, 0.1f);
          Pair<uint8_t> w(weight_bytes(wf, dt));
          Pair<float> x(randn(size_t(T * xs), 41)), y(randn(size_t(T * out), 42));
          for (Device d : {Device::Cpu, Device::Cuda}) {
            const WeightView wv{d == Device::Cpu ? static_cast<void*>(w.h.data()) : w.d.data(), dt, out, in,
                                d};
            const TensorView xv =
                TensorView::matrix(x.view(d, {T * xs}, DType::F32).data, DType::F32, T, in, xs, d);
            const TensorView yv =
                TensorView::matrix(y.view(d, {T * out}, DType::F32).data, DType::F32, T, out, -1, d);
            ASSERT_TRUE(linear_few_rows_fits(xv, wv));
            linear_few_rows(xv, wv, yv, acc);
          }
          const double e = rel_l2(y.gpu(), y.h);
          EXPECT_LE(e, 1e-5) << dtype_name(dt) << " T=" << T << " acc=" << acc << " out=" << out;
        }
}

// Several weights of different heights over the same rows in one launch, into column slices of one
// wide output and a separate one (accumulating, over its own input rows), against the CPU per product.
TEST_F(MoeCuda, LinearFewRowsMultiMatchesCpu) {
  const int64_t in = 776, xs = 784, wide = 704;
  const std::vector<int64_t> outs = {300, 9, 391, 1, 64};  // the first four side by side in `wide`
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t T : {1, 2, 8}) {
      std::vector<Pair<uint8_t>> ws;
      for (size_t j = 0; j < outs.size(); ++j) {
        const std::vector<float> wf = randn(size_t(outs[j] * in), 50 + uint32_t(j), 0.1f);
        ws.emplace_back(weight_bytes(wf, dt));
      }
      Pair<float> x(randn(size_t(T * xs), 60)), y(randn(size_t(T * wide), 61)), z(randn(size_t(T * 64), 62));
      Pair<float> x2(randn(size_t(T * 800), 63));
      for (Device d : {Device::Cpu, Device::Cuda}) {
        auto wv = [&](size_t j) {
          return WeightView{d == Device::Cpu ? static_cast<void*>(ws[j].h.data()) : ws[j].d.data(), dt,
                            outs[j], in, d};
        };
        const TensorView xv =
            TensorView::matrix(x.view(d, {T * xs}, DType::F32).data, DType::F32, T, in, xs, d);
        float* yp = static_cast<float*>(y.view(d, {T * wide}, DType::F32).data);
        std::vector<FewRowsJob> jobs;
        int64_t c0 = 0;
        for (size_t j = 0; j < 4; ++j) {
          jobs.push_back({wv(j), TensorView::matrix(yp + c0, DType::F32, T, outs[j], wide, d), j == 2});
          c0 += outs[j];
        }
        const TensorView x2v =
            TensorView::matrix(x2.view(d, {T * 800}, DType::F32).data, DType::F32, T, in, 800, d);
        jobs.push_back({wv(4), z.view(d, {T, 64}, DType::F32), true, x2v});
        linear_few_rows_multi(xv, jobs);
      }
      EXPECT_LE(rel_l2(y.gpu(), y.h), 1e-5) << dtype_name(dt) << " T=" << T;
      EXPECT_LE(rel_l2(z.gpu(), z.h), 1e-5) << dtype_name(dt) << " T=" << T;
    }
}

// A GLU's down projection with the SiLU product formed inside the GEMV, against the CPU.
TEST_F(MoeCuda, LinearFewRowsGluMatchesCpu) {
  const int64_t out = 300, in = 1288;  // 5 column blocks and a part (bf16 at 1 row: the small form)
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t T : {1, 4})
      for (bool acc : {false, true}) {
        const std::vector<float> wf = randn(size_t(out * in), 70, 0.05f);
        Pair<uint8_t> w(weight_bytes(wf, dt));
        Pair<float> g(randn(size_t(T * in), 71)), u(randn(size_t(T * in), 72)), y(randn(size_t(T * out), 73));
        for (Device d : {Device::Cpu, Device::Cuda}) {
          const WeightView wv{d == Device::Cpu ? static_cast<void*>(w.h.data()) : w.d.data(), dt, out, in, d};
          linear_few_rows_glu(g.view(d, {T, in}, DType::F32), u.view(d, {T, in}, DType::F32), wv,
                              y.view(d, {T, out}, DType::F32), acc);
        }
        EXPECT_LE(rel_l2(y.gpu(), y.h), 1e-5) << dtype_name(dt) << " T=" << T << " acc=" << acc;
      }
}

TEST_F(MoeCuda, FillUniformAndArgmaxRowsMatchCpu) {
  Pair<float> a(size_t(4099));
  Pair<uint16_t> b(size_t(4099));
  for (Device d : {Device::Cpu, Device::Cuda}) {
    fill_uniform(a.view(d, {4099}, DType::F32), 11, 3.0f, 0.5f);
    fill_uniform(b.view(d, {4099}, DType::BF16), 11, 3.0f, 0.5f);
  }
  EXPECT_LE(rel_l2(a.gpu(), a.h), 1e-7);
  const std::vector<uint16_t> gb = b.gpu();
  int differ = 0;
  for (size_t i = 0; i < gb.size(); ++i) differ += gb[i] != b.h[i];
  EXPECT_LE(differ, 2);  // a bf16 rounding tie may fall either way after an FMA on the CPU
  std::vector<float> xv = randn(size_t(7 * 1000), 12);
  xv[3 * 1000 + 17] = xv[3 * 1000 + 900] = 50.0f;  // a tie: the lower index wins
  Pair<float> x(xv);
  Pair<int32_t> out(size_t(7));
  for (Device d : {Device::Cpu, Device::Cuda})
    argmax_rows(TensorView::matrix(x.view(d, {7000}, DType::F32).data, DType::F32, 7, 1000, -1, d),
                out.view(d, {7}, DType::I32));
  EXPECT_EQ(out.gpu(), out.h);
  EXPECT_EQ(out.h[3], 17);
  // Vocabulary-long rows (split over several CTAs per row): ties across the split, a NaN, a row
  // whose best is its last column.
  const int64_t V = 163840 + 13;
  std::vector<float> lv = randn(size_t(3 * V), 13);
  lv[size_t(100)] = lv[size_t(V - 5)] = 60.0f;  // row 0: tie between the first and the last part
  lv[size_t(V + 7)] = std::nanf("");
  lv[size_t(2 * V + V - 1)] = 70.0f;
  Pair<float> lx(lv);
  Pair<int32_t> lo(size_t(3));
  for (Device d : {Device::Cpu, Device::Cuda})
    argmax_rows(TensorView::matrix(lx.view(d, {3 * V}, DType::F32).data, DType::F32, 3, V, -1, d),
                lo.view(d, {3}, DType::I32));
  EXPECT_EQ(lo.gpu(), lo.h);
  EXPECT_EQ(lo.h[0], 100);
  EXPECT_EQ(lo.h[2], int32_t(V - 1));
}

// A recorded step (kernels, an allocation and its release) replayed after its input changed in
// place: every replay computes with the current contents.
TEST_F(MoeCuda, StepGraphReplaysWithNewInputs) {
  Pair<float> x(std::vector<float>(256, 1.0f)), y(std::vector<float>(256, 0.0f));
  const TensorView xv = TensorView::matrix(x.d.data(), DType::F32, 1, 256, -1, Device::Cuda);
  const TensorView yv = TensorView::matrix(y.d.data(), DType::F32, 1, 256, -1, Device::Cuda);
  StepGraph g;
  g.capture(Device::Cuda, [&] {
    Buffer tmp(Device::Cuda, 256 * 4);
    const TensorView tv = TensorView::matrix(tmp.data(), DType::F32, 1, 256, -1, Device::Cuda);
    cast_rows(xv, tv);
    add_rows(tv, yv);
    add_rows(tv, yv);
  });
  EXPECT_EQ(y.gpu()[0], 0.0f);  // recorded, not run
  g.replay();
  x.d.upload(std::vector<float>(256, 3.0f).data(), 256 * 4);
  g.replay();
  const std::vector<float> r = y.gpu();
  for (float v : r) EXPECT_EQ(v, 8.0f);
}

}  // namespace
}  // namespace ds
