// Internal to src/gpu: what one DeviceModel::forward call shares between its layers — the packed
// step's index arrays (host and device copies), the pools, scratch matrices and the projection
// helper that feeds cuBLASLt the weights' dtype.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu/device_pools.h"
#include "gpu/device_step.h"
#include "gpu/device_weights.h"
#include "kernels/kda.h"
#include "kernels/linear.h"
#include "kernels/memory.h"
#include "kernels/mla_attention.h"
#include "model/model_config.h"

namespace ds {

// An owned f32 matrix [rows, cols] on a device, with row / column views.
struct DevMat {
  Buffer buf;
  int64_t rows = 0, cols = 0;
  Device device = Device::Cpu;

  DevMat() = default;
  DevMat(Device d, int64_t r, int64_t c)
      : buf(d, r * c * int64_t(sizeof(float))), rows(r), cols(c), device(d) {}
  float* data() const { return buf.as<float>(); }
  TensorView view() const { return f32_rows(data(), rows, cols, cols, device); }
  TensorView cols_view(int64_t c0, int64_t n) const { return f32_rows(data() + c0, rows, n, cols, device); }
  TensorView rows_view(int64_t r0, int64_t n) const {
    return f32_rows(data() + r0 * cols, n, cols, cols, device);
  }
  // The same memory as rows of width w (rows * cols == r * w).
  TensorView reshaped(int64_t r, int64_t w) const { return f32_rows(data(), r, w, w, device); }
  TensorView flat() const { return TensorView::contiguous(data(), DType::F32, {rows * cols}, device); }
};

struct ForwardContext {
  const ModelConfig& cfg;
  const DeviceWeights& w;
  DevicePools& pools;
  Device device;
  bool exact_kda;
  bool device_moe = true;     // routing and grouping on the device (false: on the host, the reference)
  bool batched_heads = true;  // MLA's per-head projections as one batched product
  bool few_row_gemv = true;   // CUDA projections of up to gemv_max_rows rows through linear_few_rows
  int64_t gemv_max_rows = 1;
  bool heads_gemv = true;  // with few_row_gemv: MLA's per-head products through linear_few_rows_heads
  int64_t token_moe_max_tokens = 0;  // up to this many tokens: moe_token_glu (routed + shared experts)
  bool dense_mla = true;  // bf16 CUDA prefill: MLA attention through the tensor cores (mla_attention_dense)
  bool mma_mla = true;    // bf16 CUDA, absorbed MLA attention: bf16 products on the tensor cores
  bool flash_mla = true;  // with dense_mla: the expanded form (mla_attention_expanded) where it is built
  bool grouped_gemm = true;     // bf16 CUDA, many tokens: routed experts through moe_gemm_glu / moe_gemm_down
  bool wgmma_moe = true;        // ... on the warpgroup-MMA kernel where it fits (false: mma.sync)
  int64_t T = 0;                // packed tokens
  int N = 0;                    // sequences
  bool decode = false;          // every sequence brings one token
  std::vector<int64_t> cu;      // host [N + 1]
  std::vector<int32_t> live;    // host [N] live slots
  std::vector<int64_t> n_past;  // host [N] tokens before the step
  std::vector<int32_t> page_off;                  // host [N] first entry of each sequence in page_table
  std::vector<KdaCheckpointRequest> checkpoints;  // (seq, slot, tokens after the step's start), sorted
  Buffer ids, tok_seq, tok_pos, page_table, page_offset, live_dev;  // I32 on the device
  int64_t n_page_table = 0;

  // page_capacity > 0: the page table buffer holds that many ids, so that rewrite() can reuse it.
  ForwardContext(const ModelConfig& c, const DeviceWeights& dw, DevicePools& p, bool exact,
                 const DeviceStep& step, int64_t page_capacity = 0);
  // A new decode step with the same number of sequences, written into the same device buffers (a
  // recorded graph reads them at their addresses). Returns false if the page table does not fit.
  bool rewrite(const DeviceStep& step);

  DevMat mat(int64_t rows, int64_t cols) const { return DevMat(device, rows, cols); }
  TensorView i32(const Buffer& b, int64_t n) const {
    return TensorView::contiguous(b.data(), DType::I32, {n}, device);
  }
  // The paged latents of MLA layer `mla_layer` for this step's tokens.
  MlaPagedLatents paged(int mla_layer) const;
  // y (+)= x · Wᵀ; on CUDA, x is cast to the weight's dtype first when that is bf16.
  void proj(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate = false) const;
  void proj(const TensorView& x, const ExpertLinear& w, const TensorView& y, bool accumulate = false) const;
  // Several projections of the same x: one linear_few_rows_multi launch for up to gemv_max_rows rows
  // on CUDA (when they fit it), else proj() per job.
  void proj_many(const TensorView& x, std::span<const FewRowsJob> jobs) const;
  // Per-head products (linear_heads): head h reads columns [x_col0 + h*s.x, + x_cols) of x_all,
  // weight w0 advanced by h*s.w elements, writes y0 advanced by h*s.y columns.
  void proj_heads(const TensorView& x_all, int64_t x_col0, int64_t x_cols, const WeightView& w0,
                  const TensorView& y0, int64_t heads, const HeadStrides& s) const;
};

// Up to this many tokens, the routed experts run as one grouped GLU (each active expert's weights
// read once, no host round trip: a decode step can be a graph); above it, the grouped GEMMs
// (bf16 on CUDA) or one GLU per active expert after one copy of the group offsets to the host.
constexpr int64_t kMoeGroupedMaxTokens = 128;

// Layer bodies (device_kda.cpp, device_mla.cpp, device_ffn.cpp): normed input n f32 [T, D] -> y.
void kda_mixer(const ForwardContext& ctx, const DeviceKda& w, int kda_layer, const TensorView& n,
               const TensorView& y);
void mla_mixer(const ForwardContext& ctx, const DeviceMla& w, int mla_layer, const TensorView& n,
               const TensorView& y);
void glu_forward(const ForwardContext& ctx, const DeviceGlu& g, const TensorView& x, const TensorView& y,
                 bool accumulate = false);
// y (+)= down(silu(gate) ⊙ up); gate may be overwritten (scratch).
void glu_down(const ForwardContext& ctx, const TensorView& gate, const TensorView& up,
              const ExpertLinear& down, const TensorView& y, bool accumulate);
void moe_forward(const ForwardContext& ctx, const DeviceMoe& w, const TensorView& x, const TensorView& y);
// Whether moe_forward keeps this layer on the device (dense SiLU experts, no LatentMoE, device_moe).
bool moe_on_device(const ForwardContext& ctx, const DeviceMoe& w);

// Whether any sequence of the step asks for argmax tokens instead of logits.
bool step_wants_argmax(const DeviceStep& step);
// Reads a step's outputs back to the host: logits f32 [n_rows, V] on the device, sequence n owning
// rows [first_row[n], first_row[n + 1]) (the last up to n_rows); tokens I32 [n_rows] = their argmax
// when step_wants_argmax. Only argmax_only sequences' token ids and the other sequences' rows cross.
void read_step_outputs(const DeviceStep& step, const Buffer& logits, const Buffer* tokens,
                       std::span<const int64_t> first_row, int64_t n_rows, int64_t V, DeviceForwardResult& r);

}  // namespace ds
