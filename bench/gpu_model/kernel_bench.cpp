// `bench gpu --kernels`: the decode steps' weight-streaming kernels alone at the Kimi-Linear-48B-A3B
// shapes, against the device copy bandwidth measured in the same run. Each kernel is recorded 24
// times into one graph over rotating copies of its weights (together > 1 GB, so no copy is still in
// L2 when it is read again) and the graph is replayed; time per kernel = replay time / 24, best of 5.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpu_model_bench.h"
#include "kernels/elementwise.h"
#include "kernels/gather.h"
#include "kernels/graph.h"
#include "kernels/linear.h"
#include "kernels/memory.h"
#include "kernels/moe.h"
#include "kernels/moe_token.h"

namespace ds::bench {
namespace {

constexpr int kLaunches = 24;
constexpr int64_t kRotateBytes = int64_t(1) << 30;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per call of body(i) (i = 0..kLaunches-1) recorded as one graph, best of 5 replays.
double time_graph(const std::function<void(int)>& body) {
  StepGraph g;
  g.capture(Device::Cuda, [&] {
    for (int i = 0; i < kLaunches; ++i) body(i);
  });
  g.replay();
  synchronize(Device::Cuda);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const double t0 = now_s();
    g.replay();
    synchronize(Device::Cuda);
    best = std::min(best, now_s() - t0);
  }
  return best / kLaunches;
}

Buffer random_bf16(int64_t n, uint64_t seed, float scale) {
  Buffer b(Device::Cuda, n * 2);
  fill_uniform(TensorView::contiguous(b.data(), DType::BF16, {n}, Device::Cuda), seed, scale);
  return b;
}
Buffer random_f32(int64_t n, uint64_t seed) {
  Buffer b(Device::Cuda, n * 4);
  fill_uniform(TensorView::contiguous(b.data(), DType::F32, {n}, Device::Cuda), seed, 1.0f);
  return b;
}

struct Proj {
  std::string name;
  std::vector<int64_t> outs;  // weights over the same x (one launch)
  int64_t in;
  bool glu;  // the input formed as silu(gate) ⊙ up
};

void print_row(const std::string& name, int64_t T, const std::string& path, double s, double bytes,
               double bw) {
  fmt::print("  {:<24} {:>4} {:<14} {:>9.1f} {:>9.1f} {:>8.0f} {:>7.1f}%\n", name, T, path, s * 1e6,
             bytes / 1e6, bytes / s / 1e9, 100.0 * bytes / s / bw);
}

void bench_projections(double bw) {
  const int64_t D = 2304;
  const std::vector<Proj> projs = {
      {"lm_head 163840x2304", {163840}, D, false},    {"KDA q,k,v 3x4096x2304", {4096, 4096, 4096}, D, false},
      {"o_proj 2304x4096", {D}, 4096, false},         {"MLA q,kv_a 6144+576", {6144, 576}, D, false},
      {"shared down 2304x1024 GLU", {D}, 1024, true}, {"dense down 2304x9216 GLU", {D}, 9216, true},
      {"KDA f_b 4096x128", {4096}, 128, false},
  };
  for (const Proj& p : projs) {
    int64_t per = 0;
    for (int64_t o : p.outs) per += o * p.in * 2;
    const int copies = int(std::max<int64_t>(1, std::min<int64_t>(kLaunches, kRotateBytes / per + 1)));
    std::vector<std::vector<Buffer>> w(static_cast<size_t>(copies));
    for (int c = 0; c < copies; ++c)
      for (size_t j = 0; j < p.outs.size(); ++j)
        w[size_t(c)].push_back(random_bf16(p.outs[j] * p.in, 100 + uint64_t(c) * 8 + j, 0.05f));
    int64_t total_out = 0;
    for (int64_t o : p.outs) total_out += o;
    for (int64_t T : {1, 2, 4, 8}) {
      const Buffer x = random_f32(T * p.in, 7), u = random_f32(T * p.in, 8);
      const Buffer y(Device::Cuda, T * total_out * 4), xb(Device::Cuda, T * p.in * 2);
      const TensorView xv = TensorView::matrix(x.data(), DType::F32, T, p.in, -1, Device::Cuda);
      const TensorView uv = TensorView::matrix(u.data(), DType::F32, T, p.in, -1, Device::Cuda);
      auto jobs_of = [&](int c) {
        std::vector<FewRowsJob> jobs;
        int64_t c0 = 0;
        for (size_t j = 0; j < p.outs.size(); ++j) {
          jobs.push_back({WeightView{w[size_t(c)][j].data(), DType::BF16, p.outs[j], p.in, Device::Cuda},
                          TensorView::matrix(static_cast<float*>(y.data()) + c0, DType::F32, T, p.outs[j],
                                             total_out, Device::Cuda),
                          false});
          c0 += p.outs[j];
        }
        return jobs;
      };
      const double s_gemv = time_graph([&](int i) {
        const std::vector<FewRowsJob> jobs = jobs_of(i % copies);
        if (p.glu)
          linear_few_rows_glu(xv, uv, jobs[0].w, jobs[0].y);
        else
          linear_few_rows_multi(xv, jobs);
      });
      print_row(p.name, T, "gemv", s_gemv, double(per), bw);
      if (T == 1 || p.glu) continue;
      // cuBLASLt with x cast to bf16 once (the path of more than gemv_max_rows rows).
      const TensorView xbv = TensorView::matrix(xb.data(), DType::BF16, T, p.in, -1, Device::Cuda);
      const double s_lt = time_graph([&](int i) {
        cast_rows(xv, xbv);
        for (const FewRowsJob& j : jobs_of(i % copies)) linear(xbv, j.w, j.y);
      });
      print_row(p.name, T, "cast+cublasLt", s_lt, double(per), bw);
    }
  }
}

// The routed + shared experts of one MoE layer: token-major (moe_token_glu) against the grouped GLU
// + combine + shared GLU (route and group precomputed; expert choices random, distinct per token).
void bench_moe(double bw) {
  const int64_t E = 256, k = 8, D = 2304, I = 1024;
  const int64_t mat = I * D;
  std::vector<Buffer> ws;
  std::vector<const void*> ptrs(size_t(3 * E));
  for (int64_t m = 0; m < 3 * E; ++m) {
    ws.push_back(random_bf16(mat, 1000 + uint64_t(m), 0.05f));
    ptrs[size_t(m)] = ws.back().data();
  }
  const Buffer table = Buffer::from_host<const void*>(Device::Cuda, ptrs);
  const Buffer sg = random_bf16(mat, 7001, 0.05f), su = random_bf16(mat, 7002, 0.05f),
               sd = random_bf16(mat, 7003, 0.05f);
  const GroupedExperts gx{static_cast<const void* const*>(table.data()), DType::BF16, E, I, D, Device::Cuda};
  std::mt19937 rng(5);
  for (int64_t T : {1, 2, 4, 8}) {
    // kLaunches different routings, each token k distinct experts.
    std::vector<Buffer> experts, weights, offsets, active, row_token, pos;
    double distinct = 0;
    for (int i = 0; i < kLaunches; ++i) {
      std::vector<int32_t> ev;
      std::vector<int32_t> all(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e) all[size_t(e)] = int32_t(e);
      std::vector<bool> seen(static_cast<size_t>(E));
      for (int64_t t = 0; t < T; ++t) {
        std::shuffle(all.begin(), all.end(), rng);
        for (int64_t j = 0; j < k; ++j) {
          ev.push_back(all[size_t(j)]);
          if (!seen[size_t(all[size_t(j)])]) seen[size_t(all[size_t(j)])] = true, distinct += 1;
        }
      }
      std::vector<float> wv(ev.size(), 0.125f);
      experts.push_back(Buffer::from_host<int32_t>(Device::Cuda, ev));
      weights.push_back(Buffer::from_host<float>(Device::Cuda, wv));
      offsets.emplace_back(Device::Cuda, (E + 1) * 4);
      active.emplace_back(Device::Cuda, (E + 1) * 4);
      row_token.emplace_back(Device::Cuda, T * k * 4);
      pos.emplace_back(Device::Cuda, T * k * 4);
    }
    distinct /= kLaunches;
    const double bytes = (distinct + 1) * 3.0 * double(mat) * 2.0;  // distinct routed + shared, read once
    const Buffer x = random_f32(T * D, 9), y(Device::Cuda, T * D * 4), h(Device::Cuda, T * (k + 1) * I * 4),
                 yg(Device::Cuda, T * k * D * 4), sh(Device::Cuda, 2 * T * I * 4);
    const TensorView xv = TensorView::matrix(x.data(), DType::F32, T, D, -1, Device::Cuda);
    const TensorView yv = TensorView::matrix(y.data(), DType::F32, T, D, -1, Device::Cuda);
    auto i32 = [](const Buffer& b, int64_t n) {
      return TensorView::contiguous(b.data(), DType::I32, {n}, Device::Cuda);
    };
    const WeightView wsg{sg.data(), DType::BF16, I, D, Device::Cuda},
        wsu{su.data(), DType::BF16, I, D, Device::Cuda}, wsd{sd.data(), DType::BF16, D, I, Device::Cuda};
    const double s_token = time_graph([&](int i) {
      MoeTokenGluArgs a;
      a.x = xv;
      a.expert = TensorView::contiguous(experts[size_t(i)].data(), DType::I32, {T, k}, Device::Cuda);
      a.weight = TensorView::contiguous(weights[size_t(i)].data(), DType::F32, {T, k}, Device::Cuda);
      a.experts = gx, a.shared_gate = wsg, a.shared_up = wsu, a.shared_down = wsd;
      a.h = TensorView::matrix(h.data(), DType::F32, T * (k + 1), I, -1, Device::Cuda);
      a.y = yv;
      moe_token_glu(a);
    });
    print_row(fmt::format("MoE layer (E {} k {} +1)", E, k), T, "token-major", s_token, bytes, bw);
    const double s_grouped = time_graph([&](int i) {
      const TensorView ex =
          TensorView::contiguous(experts[size_t(i)].data(), DType::I32, {T, k}, Device::Cuda);
      const MoeGroups g{i32(offsets[size_t(i)], E + 1), i32(active[size_t(i)], E + 1),
                        i32(row_token[size_t(i)], T * k), i32(pos[size_t(i)], T * k)};
      moe_group(ex, E, g);
      moe_grouped_glu(xv, gx, g, TensorView::matrix(h.data(), DType::F32, T * k, I, -1, Device::Cuda),
                      TensorView::matrix(yg.data(), DType::F32, T * k, D, -1, Device::Cuda));
      weighted_combine_rows(
          TensorView::matrix(yg.data(), DType::F32, T * k, D, -1, Device::Cuda),
          TensorView::contiguous(pos[size_t(i)].data(), DType::I32, {T, k}, Device::Cuda),
          TensorView::contiguous(weights[size_t(i)].data(), DType::F32, {T, k}, Device::Cuda), yv);
      const TensorView g1 = TensorView::matrix(sh.data(), DType::F32, T, I, -1, Device::Cuda);
      const TensorView u1 =
          TensorView::matrix(static_cast<float*>(sh.data()) + T * I, DType::F32, T, I, -1, Device::Cuda);
      const FewRowsJob jobs[] = {{wsg, g1, false}, {wsu, u1, false}};
      linear_few_rows_multi(xv, jobs);
      linear_few_rows_glu(g1, u1, wsd, yv, true);
    });
    print_row(fmt::format("MoE layer (E {} k {} +1)", E, k), T, "grouped+comb", s_grouped, bytes, bw);
  }
}

}  // namespace

void run_kernel_bench(double bw) {
  fmt::print(
      "\nweight-streaming kernels alone (graph of {} launches over rotating weights; bf16 weights, f32 x):\n",
      kLaunches);
  fmt::print("  {:<24} {:>4} {:<14} {:>9} {:>9} {:>8} {:>8}\n", "kernel", "rows", "path", "us", "MB", "GB/s",
             "% copy");
  bench_projections(bw);
  bench_moe(bw);
}

}  // namespace ds::bench
