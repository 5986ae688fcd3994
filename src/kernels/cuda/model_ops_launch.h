// Internal to src/kernels: plain launch functions of the device-forward kernels (kernels/
// elementwise.h, gather.h, mla_attention.h, attn_res.h, the batched short conv, the exact KDA
// prefill and the MXFP4 dequantisation), so that the .cu files need no project headers. The
// dispatchers validate the arguments and pass raw pointers (device memory) and strides (elements).
// Everything runs on the default stream.
#pragma once

#include <cstdint>

namespace ds::cuda {

void launch_cast_rows(const void* x, bool x_bf16, int64_t x_stride, void* y, bool y_bf16, int64_t y_stride,
                      int64_t rows, int64_t cols);
enum class BinaryOp { Add, MulSigmoid };
// y = op(x, y): Add: y += x; MulSigmoid: y *= sigmoid(x).
void launch_binary_rows(BinaryOp op, const float* x, int64_t x_stride, float* y, int64_t y_stride,
                        int64_t rows, int64_t cols);
void launch_situ_mul(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* y,
                     int64_t y_stride, int64_t rows, int64_t cols, float beta, float linear_beta);
void launch_embedding(const void* table, bool bf16, int64_t D, const int32_t* ids, int64_t T, float* out,
                      int64_t out_stride);
void launch_gather_rows(const float* src, int64_t src_stride, const int32_t* idx, int64_t n, int64_t C,
                        float* dst, int64_t dst_stride);
void launch_weighted_combine(const float* rows, int64_t rows_stride, const int32_t* pos, const float* w,
                             int64_t T, int64_t k, int64_t C, float* out, int64_t out_stride);
// MXFP4 [rows, cols] -> dense f32 or bf16 [rows, cols].
void launch_mxfp4_dequant(const uint8_t* packed, const uint8_t* scale, int64_t rows, int64_t cols, void* out,
                          bool bf16);

// x[i] = offset + scale * uniform_hash(seed, i), f32 or bf16 (kernels/uniform_hash.h).
void launch_fill_uniform(void* x, bool bf16, int64_t n, uint64_t seed, float scale, float offset);
// out[r] = index of the largest element of row r of x f32 [rows, cols] (ties: lowest; NaN skipped).
void launch_argmax_rows(const float* x, int64_t stride, int64_t rows, int64_t cols, int32_t* out);

// y [T, out] (+)= x [T, in] · Wᵀ, 1 <= T <= 8 f32 rows, W f32 or bf16 [out, in] (gemv.cu).
void launch_linear_few_rows(const float* x, int64_t x_stride, int64_t T, const void* w, bool bf16,
                            int64_t out, int64_t in, float* y, int64_t y_stride, bool accumulate);
// The same for up to kFewRowsMaxJobs weights of one dtype over the same x, in one launch.
constexpr int kFewRowsMaxJobs = 8;
struct FewRowsLaunchJob {
  const void* w;  // [out, in]
  float* y;       // [T, out], rows y_stride apart
  int64_t y_stride, out;
  bool accumulate;
  const float* x;  // this job's input rows [T, in], x_stride apart (the call's x when null)
  int64_t x_stride;
};
// up != nullptr: the input rows are silu(x) ⊙ up (rows up_stride apart; one job).
void launch_linear_few_rows_multi(const float* x, int64_t x_stride, int64_t T, bool bf16, int64_t in,
                                  const FewRowsLaunchJob* jobs, int n_jobs, const float* up = nullptr,
                                  int64_t up_stride = 0);

// For every head h: y_h [T, out] = x_h [T, in] · W_hᵀ, W bf16 [out, in] per head, sw elements apart;
// x_h, y_h f32: x + h·sx, y + h·sy (rows xs, ys apart); 1-2 rows (gemv_heads.cu).
struct HeadsLaunch {
  const float* x;
  int64_t xs, sx;
  const void* w;
  int64_t sw, in, out, heads;
  float* y;
  int64_t ys, sy, T;
};
bool few_rows_heads_shape_ok(int64_t T, int64_t in, int64_t out);
void launch_linear_few_rows_heads(const HeadsLaunch& l);

struct MlaLaunch {
  float* pool;
  int64_t page_tokens, R, dr;
  const int32_t *page_table, *page_offset, *tok_seq, *tok_pos;
  int64_t T;
};
void launch_mla_write(const MlaLaunch& m, const float* c, int64_t c_stride, const float* k_pe,
                      int64_t k_pe_stride);
// All heads of a token per CTA, the context split over several CTAs (mla_split.cu); false (nothing
// launched) for shapes it does not take (H > 32 or R > 512).
bool launch_mla_attention_split(const MlaLaunch& m, int64_t H, const float* q_hat, int64_t q_hat_stride,
                                const float* q_pe, int64_t q_pe_stride, int64_t q_pe_head_stride, float scale,
                                float* ctx, int64_t ctx_stride);
// The same with bf16 operands on the tensor cores (mla_decode_mma.cu); false (nothing launched) for
// shapes it does not take (R not a multiple of 64 up to 512, R + dr not a multiple of 32 up to 576,
// unaligned rows). More than 32 heads: groups of 32 heads per CTA.
bool launch_mla_attention_mma(const MlaLaunch& m, int64_t H, const float* q_hat, int64_t q_hat_stride,
                              const float* q_pe, int64_t q_pe_stride, int64_t q_pe_head_stride, float scale,
                              float* ctx, int64_t ctx_stride);
// The context split of the absorbed kernels (mla_split.cu): the workspace of
// S > 1 per-split partials [T, S, H, 2 + R] (m, l, unnormalised O of each split's online softmax;
// nullptr for S == 1), and their merge into ctx [T, H*R] (S <= 128; a split with l = 0 holds no
// positions and its O is not read), which also frees the workspace.
// Kernel arguments of a split launch: H heads (per head group where the kernel groups them).
struct MlaSplitArgs {
  MlaLaunch m;
  int H, S;
  const float* q_hat;
  int64_t qhs;
  const float* q_pe;
  int64_t qps, qph;
  float scale;
  float* ctx;  // S == 1
  int64_t cs;
  float* part;  // S > 1: [T, S, heads, 2 + R]: m, l, O
};
float* mla_partials(const MlaLaunch& m, int S, int64_t H);
void mla_merge_partials(float* part, const MlaLaunch& m, int S, int64_t H, float* ctx, int64_t ctx_stride);
void launch_mla_attention(const MlaLaunch& m, int64_t H, const float* q_hat, int64_t q_hat_stride,
                          const float* q_pe, int64_t q_pe_stride, int64_t q_pe_head_stride, float scale,
                          float* ctx, int64_t ctx_stride);

constexpr int kMaxAttnResSources = 32;
struct AttnResSources {
  const float* ptr[kMaxAttnResSources];
  int n;
};
void launch_attn_res_mix(const AttnResSources& src, int64_t T, int64_t D, const float* query, float eps,
                         float* out);
void launch_attn_res_block_scores(const AttnResSources& blocks, int64_t T, int64_t D, const float* queries,
                                  int64_t Q, float eps, float* m, float* s, float* o);
void launch_attn_res_merge(int64_t j, int64_t T, int64_t D, const float* m, const float* s, const float* o,
                           const float* partial, const float* query, float eps, float* out);

// Batched short conv + SiLU over N sequences: one thread per (sequence, channel) walks the
// sequence's tokens. Index arrays are device copies: cu_seqlens [N+1], slot [N], ck_offset [N+1]
// (checkpoints of sequence n are entries ck_offset[n] .. ck_offset[n+1]), ck_after, ck_slot.
struct ShortConvLaunch {
  int N;
  int64_t C, W;
  const float* x;
  int64_t x_stride;
  const float* taps;
  float* y;
  int64_t y_stride;
  float* pool;
  int64_t slot_stride;
  const int64_t* cu_seqlens;
  const int32_t *slot, *ck_offset, *ck_slot;
  const int64_t* ck_after;
  int64_t T;          // packed rows (cu_seqlens[N])
  int n_checkpoints;  // ck_offset[N]
};
void launch_short_conv_batch(const ShortConvLaunch& l);

// Exact KDA prefill (K = V = 128, f32 activations): the per-token f32 recurrence, one CTA per
// (sequence, head). Index arrays as above (device copies); initial slot -1 = zeros.
struct KdaExactLaunch {
  int N, H;
  const float *q, *k, *v, *f, *b;
  float* o;
  int64_t q_stride, k_stride, v_stride, f_stride, b_stride, o_stride;
  const float *a_log, *dt_bias;
  bool safe_gate;
  float lower_bound, scale;
  float* pool;
  int64_t slot_stride;
  const int64_t* cu_seqlens;
  const int32_t *initial_slot, *final_slot, *ck_offset, *ck_slot;
  const int64_t* ck_after;
};
void launch_kda_exact(const KdaExactLaunch& l);

}  // namespace ds::cuda
