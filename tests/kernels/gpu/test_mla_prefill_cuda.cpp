// The expanded MLA prefill (kernels/mla_prefill.h) on CUDA against the CPU's plain loops on the same
// random inputs: the bf16 latent gather (bit for bit) and the flash-style attention (bf16 products:
// relative L2 within 1e-2, as the other bf16 MLA kernels). ctest label "gpu"; skipped without a
// CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/memory.h"
#include "kernels/mla_prefill.h"

namespace ds {
namespace {

class MlaPrefillCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

// A host matrix and its device copy (row stride ld elements).
template <class T>
struct Pair {
  std::vector<T> host;
  Buffer dev;
  DType dt;
  int64_t rows, cols, ld;
  Pair(std::vector<T> v, DType d, int64_t r, int64_t c, int64_t l)
      : host(std::move(v)), dev(Buffer::from_host<T>(Device::Cuda, host)), dt(d), rows(r), cols(c), ld(l) {}
  TensorView view(Device d) {
    void* p = d == Device::Cpu ? static_cast<void*>(host.data()) : dev.data();
    return TensorView::matrix(p, dt, rows, cols, ld, d);
  }
};

std::vector<float> randn(int64_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}
std::vector<uint16_t> randn_bf16(int64_t n, uint32_t seed, float sd) {
  std::vector<uint16_t> b;
  for (float x : randn(n, seed, sd)) b.push_back(f32_to_bf16(x));
  return b;
}

// Sequence 0's rows on pages 3, 4, ... of a scrambled table (another sequence's 3 pages first); 1000
// rows end inside a page.
TEST_F(MlaPrefillCuda, GatherLatentsMatchesCpu) {
  const int64_t P = 16, R = 512, dr = 64, E = R + dr, n_pages = 70, L = 1000, ld = E + 8;
  std::vector<float> pool = randn(n_pages * P * E, 5, 1.0f);
  Buffer pool_dev = Buffer::from_host<float>(Device::Cuda, pool);
  std::vector<int32_t> table = {0, 1, 2};
  for (int32_t p = 0; p < 64; ++p) table.push_back((p * 37 + 11) % int32_t(n_pages));
  const Buffer table_dev = Buffer::from_host<int32_t>(Device::Cuda, table);
  Pair<uint16_t> out(std::vector<uint16_t>(size_t(L * ld), 0), DType::BF16, L, E, ld);
  for (Device d : {Device::Cpu, Device::Cuda}) {
    MlaPagedLatents p;
    p.pool = d == Device::Cpu ? pool.data() : pool_dev.as<float>();
    p.n_pages = n_pages, p.page_tokens = P, p.R = R, p.dr = dr, p.device = d;
    p.page_table =
        TensorView::contiguous(d == Device::Cpu ? static_cast<void*>(table.data()) : table_dev.data(),
                               DType::I32, {int64_t(table.size())}, d);
    mla_gather_latents(p, 3, L, out.view(d));
  }
  const std::vector<uint16_t> got = out.dev.to_host<uint16_t>();
  int64_t differ = 0;
  for (int64_t t = 0; t < L; ++t)
    for (int64_t k = 0; k < E; ++k) differ += got[size_t(t * ld + k)] != out.host[size_t(t * ld + k)];
  EXPECT_EQ(differ, 0);
}

struct Case {
  int64_t H, dn, dr, dv, p0, T;
};

// One chunk of T query rows after p0 keys on the CPU and, once per form, on CUDA (q, kv and o with row
// strides wider than their rows); returns the relative L2 distance of each form's o.
std::vector<double> expanded_case(const Case& c, uint32_t seed, const std::vector<MlaFlashForm>& forms) {
  const int64_t L = c.p0 + c.T, dq = c.dn + c.dr, W = c.H * (c.dn + c.dv);
  const int64_t ldq = c.H * dq + 2, ldkv = W + 8, ldpe = c.dr + 8, ldo = c.H * c.dv + 2;
  Pair<float> q(randn(c.T * ldq, seed, 1.0f), DType::F32, c.T, c.H * dq, ldq);
  Pair<uint16_t> kv(randn_bf16(L * ldkv, seed + 1, 1.0f), DType::BF16, L, W, ldkv);
  Pair<uint16_t> kpe(randn_bf16(L * ldpe, seed + 2, 1.0f), DType::BF16, L, c.dr, ldpe);
  const std::vector<float> o0 = randn(c.T * ldo, seed + 3, 1.0f);
  Pair<float> o(o0, DType::F32, c.T, c.H * c.dv, ldo);
  auto run = [&](Device d, MlaFlashForm form) {
    MlaExpandedArgs a;
    a.H = c.H, a.dn = c.dn, a.dr = c.dr, a.dv = c.dv;
    a.q = q.view(d), a.kv = kv.view(d), a.k_pe = kpe.view(d), a.o = o.view(d);
    a.p0 = c.p0, a.scale = 1.0f / std::sqrt(float(dq)), a.form = form;
    mla_attention_expanded(a);
  };
  run(Device::Cpu, MlaFlashForm::Auto);
  std::vector<double> errs;
  for (MlaFlashForm form : forms) {
    o.dev = Buffer::from_host<float>(Device::Cuda, o0);
    run(Device::Cuda, form);
    const std::vector<float> got = o.dev.to_host<float>();
    double num = 0, den = 0;
    int64_t untouched = 0;
    for (int64_t t = 0; t < c.T; ++t) {
      for (int64_t k = 0; k < c.H * c.dv; ++k) {
        const double g = got[size_t(t * ldo + k)], w = o.host[size_t(t * ldo + k)];
        num += (g - w) * (g - w), den += w * w;
      }
      for (int64_t k = c.H * c.dv; k < ldo; ++k)  // the padding columns keep their values
        untouched += got[size_t(t * ldo + k)] == o.host[size_t(t * ldo + k)];
    }
    EXPECT_EQ(untouched, c.T * (ldo - c.H * c.dv));
    errs.push_back(std::sqrt(num / den));
  }
  return errs;
}

// Kimi's head widths: 32 heads from position 0 (300 rows: a partial query block, query blocks of fewer
// key blocks than the deepest look-ahead), 4 heads after 150 cached keys (1100 rows: 9 query blocks, key
// blocks crossing them) and after 5000 (a long prefix, a 70-row chunk), each through every pipeline
// form; the test models' widths (3 heads, 260 rows after 37; one form).
TEST_F(MlaPrefillCuda, ExpandedMatchesCpu) {
  const Case cases[] = {{32, 128, 64, 128, 0, 300},
                        {4, 128, 64, 128, 150, 1100},
                        {4, 128, 64, 128, 5000, 70},
                        {3, 64, 32, 64, 37, 260}};
  const std::vector<MlaFlashForm> all = {MlaFlashForm::Auto,   MlaFlashForm::SmemQ1, MlaFlashForm::SmemQ1Lazy,
                                         MlaFlashForm::SmemQ2, MlaFlashForm::SmemQ3, MlaFlashForm::RegQ1,
                                         MlaFlashForm::RegQ2,  MlaFlashForm::RegQ4,  MlaFlashForm::SmemQ1N96};
  uint32_t seed = 90;
  for (const Case& c : cases) {
    const std::vector<double> e =
        expanded_case(c, seed += 10, c.dn == 128 ? all : std::vector<MlaFlashForm>{MlaFlashForm::Auto});
    std::printf("    rel L2 mla_attention_expanded H %lld, %lld+%lld/%lld, %lld rows after %lld, per form:",
                static_cast<long long>(c.H), static_cast<long long>(c.dn), static_cast<long long>(c.dr),
                static_cast<long long>(c.dv), static_cast<long long>(c.T), static_cast<long long>(c.p0));
    for (double x : e) {
      std::printf(" %.3g", x);
      EXPECT_LE(x, 1e-2);
    }
    std::printf("\n");
  }
}

}  // namespace
}  // namespace ds
