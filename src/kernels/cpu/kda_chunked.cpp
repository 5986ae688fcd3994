// Chunked KDA prefill (Kimi Linear tech report, arXiv 2510.26692 §3.1): per head and chunk of C tokens, the
// pseudo-values Ṽ = (I + L)^{-1} · β ⊙ (V − K̂ S0) are found by forward substitution on the right-hand side
// (no explicit inverse), then O = Q̂ S0 + A_qk Ṽ and S ← Diag(γ_C) S0 + (k ⊙ exp(G_C − G))ᵀ Ṽ.
// Every exponent is a difference G_r − G_i with r ≥ i, so it is ≤ 0: no overflow for any gate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/isa/kernel_table.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_check.h"

namespace ds::cpu {

namespace {

// Scratch of one head's chunk, carved from one buffer (sizes: isa/kernel_table.h).
struct ChunkBuffers {
  std::vector<float> buf;
  cpu::KdaChunkScratch s{};
  ChunkBuffers(const ChunkBuffers&) = delete;
  ChunkBuffers& operator=(const ChunkBuffers&) = delete;
  ChunkBuffers(int64_t C, int64_t K, int64_t V) {
    const int64_t sizes[] = {C * K, C * K, C * K, C * V, C * C, C * C, cpu::kKdaSub * K, K * cpu::kKdaSub,
                             C * K, C * K, K * C};
    int64_t total = 0;
    for (int64_t n : sizes) total += n;
    buf.resize(size_t(total));
    float* p = buf.data();
    float** slots[] = {&s.G, &s.Khat, &s.Qhat, &s.U, &s.L, &s.A, &s.Kd, &s.KdT, &s.Kr, &s.Qr, &s.Kt};
    for (size_t i = 0; i < std::size(slots); ++i) *slots[i] = p, p += sizes[i];
  }
};

void check_emit(const KdaDims& d, int64_t chunk, std::span<const int64_t> emit_at,
                std::span<float* const> emit_states) {
  DS_CHECK(chunk >= 1 && chunk <= 1024, "kda_chunked: chunk size {} outside [1, 1024]", chunk);
  DS_CHECK(emit_at.size() == emit_states.size(), "kda_chunked: {} emit positions but {} state buffers",
           emit_at.size(), emit_states.size());
  for (size_t i = 0; i < emit_at.size(); ++i) {
    const int64_t p = emit_at[i];
    DS_CHECK(p > 0 && p <= d.T, "kda_chunked: emit position {} outside (0, T={}]", p, d.T);
    DS_CHECK(p % chunk == 0 || p == d.T,
             "kda_chunked: emit position {} is neither a multiple of chunk {} nor T={}", p, chunk, d.T);
    DS_CHECK(i == 0 || p > emit_at[i - 1], "kda_chunked: emit positions not increasing at {} ({})", i, p);
    DS_CHECK(emit_states[i] != nullptr, "kda_chunked: null state buffer for position {}", p);
  }
}

}  // namespace

void kda_chunked(const KdaDims& d, const KdaTensors& t, float scale, int64_t chunk,
                 std::span<const int64_t> emit_at, std::span<float* const> emit_states) {
  kda_check_args(d, t);
  check_emit(d, chunk, emit_at, emit_states);
  const int64_t KV = d.K * d.V;
  const cpu::KernelTable& kt = cpu::kernels();
#pragma omp parallel for schedule(static) if (d.H > 1 && d.T > 0)
  for (int64_t h = 0; h < d.H; ++h) {
    ChunkBuffers w(std::min(chunk, std::max<int64_t>(d.T, 1)), d.K, d.V);
    float* S = t.S + h * KV;
    size_t next = 0;
    for (int64_t s0 = 0; s0 < d.T; s0 += chunk) {
      const int64_t n = std::min(chunk, d.T - s0);
      const int64_t row = s0 * d.H + h;
      const cpu::KdaHeadRows x{t.q + row * d.K, t.k + row * d.K, t.v + row * d.V, t.g + row * d.K,
                               t.beta + row,    d.H * d.K,       d.H * d.V,       d.H};
      kt.kda_chunk_head(x, n, d.K, d.V, scale, S, t.o + row * d.V, d.H * d.V, w.s);
      if (next < emit_at.size() && emit_at[next] == s0 + n) {
        std::memcpy(emit_states[next] + h * KV, S, size_t(KV) * sizeof(float));
        ++next;
      }
    }
  }
}

}  // namespace ds::cpu
