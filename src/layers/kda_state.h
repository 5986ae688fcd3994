// KDA decode state of one layer for one sequence: the short-conv windows (last W-1 pre-conv q/k/v
// projections, oldest first) and the delta-rule state S in [K, V] layout, both f32.
//  - KdaStateShape: the sizes, from the layer config.
//  - KdaStateView: where such a state lives (a live slot or checkpoint slot of an executor's pool,
//    or a KdaState); layers read and write states only through views.
//  - KdaState: an owning state (standalone runs, tests). A fresh state is all zeros.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace ds {

struct KdaStateShape {
  int n_head = 0, head_dim = 0, conv_window = 0;  // H, K (== V), W-1

  size_t conv_floats() const { return size_t(3) * n_head * head_dim * conv_window; }  // [3, P, W-1]
  size_t s_floats() const { return size_t(n_head) * head_dim * head_dim; }            // [H, K, V]
  size_t floats() const { return conv_floats() + s_floats(); }
  bool operator==(const KdaStateShape&) const = default;
};

struct KdaStateView {
  KdaStateShape shape;
  float* conv = nullptr;  // f32 [3, P, W-1], P = H*K; index 0/1/2 = q/k/v, time oldest -> newest
  float* S = nullptr;     // f32 [H, K, V]

  bool valid() const { return conv != nullptr && S != nullptr; }
  // Views over one contiguous block of shape.floats() values: conv first, then S.
  static KdaStateView over(const KdaStateShape& shape, float* data) {
    return {shape, data, data + shape.conv_floats()};
  }
  void copy_from(const KdaStateView& src) const {
    std::memcpy(conv, src.conv, shape.conv_floats() * sizeof(float));
    std::memcpy(S, src.S, shape.s_floats() * sizeof(float));
  }
  void zero() const {
    std::memset(conv, 0, shape.conv_floats() * sizeof(float));
    std::memset(S, 0, shape.s_floats() * sizeof(float));
  }
};

struct KdaState {
  int n_head = 0, head_dim = 0, conv_window = 0;  // H, K (== V), W-1
  std::vector<float> conv;                        // f32 [3, P, W-1]
  std::vector<float> S;                           // f32 [H, K, V], S[h, k, v]

  void init(int n_head_, int head_dim_, int conv_kernel) {
    n_head = n_head_;
    head_dim = head_dim_;
    conv_window = conv_kernel - 1;
    conv.assign(shape().conv_floats(), 0.0f);
    S.assign(shape().s_floats(), 0.0f);
  }
  int channels() const { return n_head * head_dim; }  // P
  KdaStateShape shape() const { return {n_head, head_dim, conv_window}; }
  KdaStateView view() { return {shape(), conv.data(), S.data()}; }
};

}  // namespace ds
