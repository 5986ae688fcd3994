// KDA per-token recurrence (fla-org/flash-linear-attention `fla/ops/kda/naive.py`): the oracle and a
// decode-optimised variant.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/isa/kernel_table.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_check.h"

namespace ds::cpu {

void kda_recurrent_ref(const KdaDims& d, const KdaTensors& t, float scale) {
  kda_check_args(d, t);
  const int64_t H = d.H, K = d.K, V = d.V;
  std::vector<float> e(static_cast<size_t>(V));
  for (int64_t h = 0; h < H; ++h) {
    float* S = t.S + h * K * V;
    for (int64_t s = 0; s < d.T; ++s) {
      const float* q = t.q + (s * H + h) * K;
      const float* k = t.k + (s * H + h) * K;
      const float* g = t.g + (s * H + h) * K;
      const float* v = t.v + (s * H + h) * V;
      const float b = t.beta[s * H + h];
      float* o = t.o + (s * H + h) * V;
      // 1. S <- Diag(exp(g)) S
      for (int64_t j = 0; j < K; ++j) {
        const float a = std::exp(g[j]);
        for (int64_t c = 0; c < V; ++c) S[j * V + c] *= a;
      }
      // 2. e = v - Sᵀ k
      for (int64_t c = 0; c < V; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) acc += S[j * V + c] * k[j];
        e[size_t(c)] = v[c] - acc;
      }
      // 3. S <- S + beta k eᵀ
      for (int64_t j = 0; j < K; ++j)
        for (int64_t c = 0; c < V; ++c) S[j * V + c] += b * k[j] * e[size_t(c)];
      // 4. o = Sᵀ (scale q)
      for (int64_t c = 0; c < V; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) acc += S[j * V + c] * (scale * q[j]);
        o[c] = acc;
      }
    }
  }
}

void kda_recurrent_batch(std::span<const KdaRecurrentJob> jobs, float scale) {
  for (const KdaRecurrentJob& j : jobs) kda_check_args(j.d, j.t);
  const cpu::KernelTable& kt = cpu::kernels();
  // Tasks: every job's heads × value-column tiles of kda_tile_cols (the last tile of a head may be
  // narrower); jobs whose value dim is not a multiple of the vector width run the reference.
  std::vector<int64_t> first_task(jobs.size() + 1, 0);
  int64_t work = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const KdaDims& d = jobs[i].d;
    const bool tiled = d.T > 0 && d.V % kt.lanes == 0;
    first_task[i + 1] = first_task[i] + (tiled ? d.H * ((d.V + kt.kda_tile_cols - 1) / kt.kda_tile_cols) : 0);
    work += d.T * d.K * d.V * d.H;
    if (d.T > 0 && !tiled) kda_recurrent_ref(d, jobs[i].t, scale);
  }
  const int64_t n_tasks = first_task.back();
  // Decode of a small layer is a few microseconds: threads only pay off with enough work.
  const bool parallel = n_tasks > 1 && work >= (int64_t(1) << 16);
  int64_t max_k = 0;
  for (const KdaRecurrentJob& j : jobs) max_k = std::max(max_k, j.d.K);
#pragma omp parallel if (parallel)
  {
    std::vector<float> alpha(static_cast<size_t>(max_k));
#pragma omp for schedule(static)
    for (int64_t task = 0; task < n_tasks; ++task) {
      const size_t i =
          size_t(std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1);
      const KdaDims& d = jobs[i].d;
      const int64_t per_head = (d.V + kt.kda_tile_cols - 1) / kt.kda_tile_cols, local = task - first_task[i];
      const int64_t h = local / per_head, c0 = (local % per_head) * kt.kda_tile_cols;
      kt.kda_recurrent_tile(d, jobs[i].t, scale, h, c0, std::min(kt.kda_tile_cols, d.V - c0), alpha.data());
    }
  }
}

void kda_recurrent(const KdaDims& d, const KdaTensors& t, float scale) {
  const KdaRecurrentJob j{d, t};
  kda_recurrent_batch({&j, 1}, scale);
}

}  // namespace ds::cpu
