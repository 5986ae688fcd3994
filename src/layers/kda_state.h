// KdaState: the decode state of one KDA layer for one sequence — the short-conv windows (last W-1
// pre-conv q/k/v projections, oldest first) and the delta-rule state S in [K, V] layout, both f32.
// Invariant: sizes match the layer shape given to init(); a fresh state is all zeros.
#pragma once

#include <cstddef>
#include <vector>

namespace ds {

struct KdaState {
  int n_head = 0, head_dim = 0, conv_window = 0;  // H, K (== V), W-1
  std::vector<float> conv;  // f32 [3, P, W-1], P = H*K; index 0/1/2 = q/k/v, time oldest -> newest
  std::vector<float> S;     // f32 [H, K, V], S[h, k, v]

  void init(int n_head_, int head_dim_, int conv_kernel) {
    n_head = n_head_;
    head_dim = head_dim_;
    conv_window = conv_kernel - 1;
    conv.assign(std::size_t(3) * n_head * head_dim * conv_window, 0.0f);
    S.assign(std::size_t(n_head) * head_dim * head_dim, 0.0f);
  }
  int channels() const { return n_head * head_dim; }  // P
};

}  // namespace ds
