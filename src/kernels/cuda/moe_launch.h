// Internal to src/kernels: plain launch functions of the device MoE kernels (kernels/moe.h), so that
// the .cu file needs no project headers. Device pointers; strides in elements. Default stream.
#pragma once

#include <cstdint>

namespace ds::cuda {

// One CTA per token: sigmoid scores, k rounds of a block arg-max over score + bias (ties: lower id).
// (Up to 1024 experts and k <= 32 it runs launch_moe_route_warp instead.)
void launch_moe_route(const float* logits, const float* bias, int64_t T, int64_t E, int k, bool renormalize,
                      float scaling, int32_t* expert, float* weight);
// The same results with one warp per token and the scores in registers (moe_route_warp.cu), as a
// programmatic dependent launch; false (nothing launched) for E > 1024 or k > 32.
bool launch_moe_route_warp(const float* logits, const float* bias, int64_t T, int64_t E, int k,
                           bool renormalize, float scaling, int32_t* expert, float* weight);

// Counts per expert and the active list (one CTA), then one CTA per expert places its rows in token
// order (warp ballots over the (token, slot) pairs).
void launch_moe_group(const int32_t* expert, int64_t n, int64_t k, int64_t E, int32_t* offsets,
                      int32_t* active, int32_t* row_token, int32_t* pos);

struct GroupedGluLaunch {
  const float* x;
  int64_t x_stride;
  const void* const* ptrs;  // [3E]: gate, up, down
  bool bf16;
  int64_t E, I, D;
  const int32_t *offsets, *active, *row_token;
  int64_t n_rows;  // T*k: the grid covers min(E, n_rows) active experts
  float* h;
  int64_t h_stride;
  float* y;
  int64_t y_stride;
};
// gate/up: one warp per (active expert, intermediate row) pair of weight rows, 16-byte loads, all
// of the expert's rows in tiles of 4; down: one warp per (active expert, output row).
void launch_moe_grouped_glu(const GroupedGluLaunch& l);

}  // namespace ds::cuda
