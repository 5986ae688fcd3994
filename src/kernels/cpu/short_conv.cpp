#include "kernels/cpu/short_conv.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

namespace {
void check_conv_args(int64_t x_stride, int64_t T, int64_t C, int64_t W, int64_t y_stride) {
  DS_CHECK(T >= 0 && C > 0, "short_conv: bad shape T={} C={}", T, C);
  DS_CHECK(W >= 1 && W <= 16, "short_conv: kernel width {} outside [1, 16]", W);
  DS_CHECK(x_stride >= C && y_stride >= C, "short_conv: row strides x={} y={} below C={}", x_stride, y_stride,
           C);
}
}  // namespace

void short_conv_silu_ref(const float* x, int64_t x_stride, int64_t T, int64_t C, const float* taps, int64_t W,
                         float* state, float* y, int64_t y_stride) {
  check_conv_args(x_stride, T, C, W, y_stride);
  const int64_t P = W - 1;
  for (int64_t c = 0; c < C; ++c) {
    // seq = [state[c, 0..P) ; x[0..T, c]]
    std::vector<float> seq(size_t(P + T));
    for (int64_t j = 0; j < P; ++j) seq[size_t(j)] = state[c * P + j];
    for (int64_t t = 0; t < T; ++t) seq[size_t(P + t)] = x[t * x_stride + c];
    for (int64_t t = 0; t < T; ++t) {
      float acc = 0.0f;
      for (int64_t j = 0; j < W; ++j) acc += taps[c * W + j] * seq[size_t(t + j)];
      y[t * y_stride + c] = siluf(acc);
    }
    for (int64_t j = 0; j < P; ++j) state[c * P + j] = seq[size_t(T + j)];
  }
}

void short_conv_silu(const float* x, int64_t x_stride, int64_t T, int64_t C, const float* taps, int64_t W,
                     float* state, float* y, int64_t y_stride) {
  check_conv_args(x_stride, T, C, W, y_stride);
  const int64_t P = W - 1;
  // Channel-innermost copies: tapsT [W, C] and the carried window hist [P, C] (oldest first).
  std::vector<float> tapsT(size_t(W * C)), hist(size_t(std::max<int64_t>(P, 1) * C));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = 0; j < W; ++j) tapsT[size_t(j * C + c)] = taps[c * W + j];
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = 0; j < P; ++j) hist[size_t(j * C + c)] = state[c * P + j];
  // Input row at time t' in [-P, T): the window before t = 0 comes from hist.
  auto row = [&](int64_t tp) { return tp >= 0 ? x + tp * x_stride : hist.data() + (tp + P) * C; };
  const cpu::KernelTable& k = cpu::kernels();
#pragma omp parallel for schedule(static) if (T * C * W >= (int64_t(1) << 18))
  for (int64_t t = 0; t < T; ++t) {
    const float* rows[16];
    for (int64_t j = 0; j < W; ++j) rows[j] = row(t - P + j);
    k.conv_silu_row(rows, tapsT.data(), C, W, y + t * y_stride);
  }
  // New window: the last P inputs of [hist ; x].
  for (int64_t j = 0; j < P; ++j) {
    const float* src = row(T - P + j);
    for (int64_t c = 0; c < C; ++c) state[c * P + j] = src[c];
  }
}

}  // namespace ds::cpu
