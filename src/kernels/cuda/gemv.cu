// Few-row linear (kernels/linear.h linear_few_rows, linear_few_rows_multi): y_j [T, out_j] (+)= x [T, in] ·
// W_jᵀ for T <= 8 f32 rows and up to 8 weights over the same x in one launch, W f32 or bf16 read once:
// each warp owns 2 (T <= 2) or 4 output rows that share every piece of x it loads, and issues the
// 16-byte loads (that skip L1) of several 256-column blocks of all its rows before it uses any, so
// that 8 independent loads per lane are in flight; x stays in L1/L2. Optionally the input is formed
// as silu(gate) ⊙ up while it is loaded (a GLU's down projection). The decode steps' projections
// without a cast of x or a GEMM tile, and with one launch for all the projections of one input.
// Launched with PDL (pdl.cuh): each warp's first weight loads are issued before it waits for the
// kernel that writes x, and the next kernel may launch as soon as that wait has passed.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {
namespace {

constexpr int kMaxRows = 8;

struct Job {
  const void* w;
  float* y;
  int64_t y_stride, out;
  int32_t block0;  // first CTA of this job
  int32_t accumulate;
  const float* x;  // input rows, xs apart
  int64_t xs;
};
struct Jobs {
  Job job[kFewRowsMaxJobs];
  int n;
};

__device__ __forceinline__ float silu_f(float v) {
  return v / (1.0f + __expf(-v));
}

// Two forms of the kernel: Narrow (8 warps per CTA, 2 or 4 output rows per warp) and, for short bf16
// launches of up to 2 rows, Small (2 warps per CTA, 1 output row per warp, 9 column blocks: a whole
// 2304-column row, the hidden size, in one round trip), which spreads a launch of fewer rows than
// multiprocessors x 16 (the MoE router's 256) over more multiprocessors. Each lane's columns are summed
// in the same order in both forms.
enum class Form { Narrow, Small };

// Warps per CTA, output rows per warp (they share each loaded piece of x) and 256-column blocks whose
// weight loads are all issued before any is used: kR * kU independent 16-byte loads in flight per lane.
template <int kT, Form kF = Form::Narrow>
struct Shape {
  static constexpr int kWarps = kF == Form::Small ? 2 : 8;
  static constexpr int kR = kF == Form::Small ? 1 : kT <= 2 ? 2 : 4;
  static constexpr int kU = kF == Form::Small ? 9 : kT <= 2 ? 4 : 2;
};

// kGlu: the input row is silu(x) ⊙ x2 (x2 rows x2s apart), formed as it is loaded.
template <class W, int kT, bool kGlu, Form kF = Form::Narrow>
__global__ void __launch_bounds__(256) gemv_kernel(const float* x2, int64_t x2s, int64_t in, Jobs jobs) {
  constexpr int kWarps = Shape<kT, kF>::kWarps, kR = Shape<kT, kF>::kR, kU = Shape<kT, kF>::kU;
  int j = 0;
  while (j + 1 < jobs.n && int(blockIdx.x) >= jobs.job[j + 1].block0) ++j;
  const Job& jb = jobs.job[j];
  const float* x = jb.x;
  const int64_t xs = jb.xs;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o0 = (int64_t(int(blockIdx.x) - jb.block0) * kWarps + warp) * kR;
  if (o0 >= jb.out) return;
  const W* wr[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) wr[r] = static_cast<const W*>(jb.w) + min(o0 + r, jb.out - 1) * in;
  float acc[kR][kT] = {};
  for (int64_t c0 = lane * 8; c0 < in; c0 += 256 * kU) {
    Chunk<W> wv[kR][kU];
#pragma unroll
    for (int u = 0; u < kU; ++u)
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (c0 + u * 256 < in)
          wv[r][u].load(wr[r] + c0 + u * 256);
        else
          wv[r][u].zero();
      }
    // The first weights are in flight before the wait for the kernel that writes x (PDL); once it has
    // passed, the next kernel may launch (its own wait holds it until this one has finished).
    if (c0 == lane * 8) pdl_wait(), pdl_trigger();
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t c = c0 + u * 256;
      if (c >= in) break;
      float w[kR][8];
#pragma unroll
      for (int r = 0; r < kR; ++r) wv[r][u].get(w[r]);
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        float xv[8];
        load8(x + t * xs + c, xv);
        if constexpr (kGlu) {
          float uv[8];
          load8(x2 + t * x2s + c, uv);
#pragma unroll
          for (int q = 0; q < 8; ++q) xv[q] = silu_f(xv[q]) * uv[q];
        }
#pragma unroll
        for (int r = 0; r < kR; ++r)
#pragma unroll
          for (int q = 0; q < 8; ++q) acc[r][t] += w[r][q] * xv[q];
      }
    }
  }
  float* y = jb.y;
  const int64_t ys = jb.y_stride;
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int t = 0; t < kT; ++t) {
      const float sum = warp_sum(acc[r][t]);
      if (lane == 0 && o0 + r < jb.out) y[t * ys + o0 + r] = jb.accumulate ? y[t * ys + o0 + r] + sum : sum;
    }
}

// The Small form with its weights streamed into shared memory (bf16, no GLU, rows of up to
// kAsyncBlocks 256-column blocks): every block of the warp's row is issued before the wait for x, so a
// 4096-column row (the output projections) is one round trip instead of two, and the whole launch's
// weights can arrive under the kernel before it. Same sums in the same order as the Small form.
constexpr int kAsyncBlocks = 16;

template <int kT>
__global__ void __launch_bounds__(64) gemv_async_kernel(int64_t in, Jobs jobs) {
  constexpr int kWarps = Shape<kT, Form::Small>::kWarps;
  __shared__ uint4 buf[kWarps][kAsyncBlocks][32];
  int j = 0;
  while (j + 1 < jobs.n && int(blockIdx.x) >= jobs.job[j + 1].block0) ++j;
  const Job& jb = jobs.job[j];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o0 = int64_t(int(blockIdx.x) - jb.block0) * kWarps + warp;
  if (o0 >= jb.out) return;
  const __nv_bfloat16* wr = static_cast<const __nv_bfloat16*>(jb.w) + o0 * in;
#pragma unroll
  for (int u = 0; u < kAsyncBlocks; ++u) {
    const int64_t c = lane * 8 + u * 256;
    if (c < in) cp_async16(&buf[warp][u][lane], wr + c, true);
  }
  cp_async_commit();
  pdl_wait();  // x comes from the kernel before; the whole row is in flight
  pdl_trigger();
  cp_async_wait_own<0>();
  const float* x = jb.x;
  float acc[kT] = {};
#pragma unroll
  for (int u = 0; u < kAsyncBlocks; ++u) {
    const int64_t c = lane * 8 + u * 256;
    if (c >= in) break;
    float w[8];
    bf16x8_to_f32(buf[warp][u][lane], w);
#pragma unroll
    for (int t = 0; t < kT; ++t) {
      float xv[8];
      load8(x + t * jb.xs + c, xv);
#pragma unroll
      for (int q = 0; q < 8; ++q) acc[t] += w[q] * xv[q];
    }
  }
#pragma unroll
  for (int t = 0; t < kT; ++t) {
    const float sum = warp_sum(acc[t]);
    float* y = jb.y + t * jb.y_stride + o0;
    if (lane == 0) *y = jb.accumulate ? *y + sum : sum;
  }
}

// Env DS_GEMV_ASYNC=0: the Small form keeps its weights in registers (gemv_kernel) at every width.
bool small_async(int64_t in) {
  const char* e = std::getenv("DS_GEMV_ASYNC");
  return in <= 256 * kAsyncBlocks && (e == nullptr || std::atoi(e) != 0);
}

template <class W, bool kGlu>
void launch_rows(Form form, int64_t T, const float* x2, int64_t x2s, int64_t in, const Jobs& jobs,
                 unsigned grid) {
  if constexpr (std::is_same_v<W, __nv_bfloat16>) {
    const dim3 g(grid);
    if (form == Form::Small && !kGlu && small_async(in))
      return T == 1 ? launch_pdl(gemv_async_kernel<1>, g, dim3(64), 0, in, jobs)
                    : launch_pdl(gemv_async_kernel<2>, g, dim3(64), 0, in, jobs);
    if (form == Form::Small && T == 1)
      return launch_pdl(gemv_kernel<W, 1, kGlu, Form::Small>, g, dim3(64), 0, x2, x2s, in, jobs);
    if (form == Form::Small)
      return launch_pdl(gemv_kernel<W, 2, kGlu, Form::Small>, g, dim3(64), 0, x2, x2s, in, jobs);
  }
  switch (T) {
#define DS_GEMV_CASE(n) \
  case n:               \
    return launch_pdl(gemv_kernel<W, n, kGlu>, dim3(grid), dim3(256), 0, x2, x2s, in, jobs);
    DS_GEMV_CASE(1)
    DS_GEMV_CASE(2)
    DS_GEMV_CASE(3)
    DS_GEMV_CASE(4)
    DS_GEMV_CASE(5)
    DS_GEMV_CASE(6)
    DS_GEMV_CASE(7)
    DS_GEMV_CASE(8)
#undef DS_GEMV_CASE
  }
}

// The form of a launch of `rows` output rows in all: Small where Narrow would have fewer CTAs than
// env DS_GEMV_SMALL_CTAS, default 1.5 × the multiprocessors: below that, Narrow's 16-row CTAs load
// the multiprocessors unevenly (at 144 CTAs on 132, the 48B shape's 2304-row output projections,
// 12 multiprocessors stream two CTAs' rows while the rest wait), while Small spreads the rows over
// 8× as many 2-warp CTAs. On an H200 (docs/perf.md, decode round 7) 1.5× (the router and the output
// projections Small) was 0.3 % faster a batch-1 step than 1× (the router alone) in 6 of 6 rotated
// rounds; Small for every launch was not faster than 1×.
Form pick_form(bool bf16, int64_t T, int64_t in, int64_t rows) {
  static const int64_t small_below = [] {
    const char* e = std::getenv("DS_GEMV_SMALL_CTAS");
    return e != nullptr ? int64_t(std::atoll(e)) : int64_t(multiprocessor_count()) * 3 / 2;
  }();
  const int64_t narrow_ctas = (rows + 15) / 16;
  return bf16 && T <= 2 && in > 1024 && narrow_ctas < small_below ? Form::Small : Form::Narrow;
}

}  // namespace

void launch_linear_few_rows_multi(const float* x, int64_t x_stride, int64_t T, bool bf16, int64_t in,
                                  const FewRowsLaunchJob* jobs, int n_jobs, const float* up,
                                  int64_t up_stride) {
  require(T >= 1 && T <= kMaxRows && in % 8 == 0 && x_stride % 4 == 0 && up_stride % 4 == 0 && n_jobs >= 1 &&
              n_jobs <= kFewRowsMaxJobs,
          "linear_few_rows (CUDA): 1..8 rows, in % 8 == 0, row stride % 4 == 0, 1..8 weights");
  Jobs js{};
  int64_t blocks = 0, rows = 0;
  for (int j = 0; j < n_jobs; ++j) rows += jobs[j].out;
  const Form form = pick_form(bf16, T, in, rows);
  const int64_t rows_per_cta = form == Form::Small ? Shape<1, Form::Small>::kWarps * Shape<1, Form::Small>::kR
                               : T <= 2            ? Shape<1>::kWarps * Shape<1>::kR
                                                   : Shape<8>::kWarps * Shape<8>::kR;
  for (int j = 0; j < n_jobs; ++j) {
    const bool own = jobs[j].x != nullptr;
    require(!own || jobs[j].x_stride % 4 == 0, "linear_few_rows (CUDA): a job's row stride % 4 != 0");
    js.job[j] =
        Job{jobs[j].w,       jobs[j].y,          jobs[j].y_stride,    jobs[j].out,
            int32_t(blocks), jobs[j].accumulate, own ? jobs[j].x : x, own ? jobs[j].x_stride : x_stride};
    blocks += (jobs[j].out + rows_per_cta - 1) / rows_per_cta;
  }
  js.n = n_jobs;
  require(blocks <= 0x7fffffff, "linear_few_rows (CUDA): too many output rows");
  const unsigned g = unsigned(blocks);
  if (bf16 && up)
    launch_rows<__nv_bfloat16, true>(form, T, up, up_stride, in, js, g);
  else if (bf16)
    launch_rows<__nv_bfloat16, false>(form, T, nullptr, 0, in, js, g);
  else if (up)
    launch_rows<float, true>(form, T, up, up_stride, in, js, g);
  else
    launch_rows<float, false>(form, T, nullptr, 0, in, js, g);
  check_launch("linear_few_rows kernel");
}

void launch_linear_few_rows(const float* x, int64_t x_stride, int64_t T, const void* w, bool bf16,
                            int64_t out, int64_t in, float* y, int64_t y_stride, bool accumulate) {
  const FewRowsLaunchJob j{w, y, y_stride, out, accumulate, x, x_stride};
  launch_linear_few_rows_multi(x, x_stride, T, bf16, in, &j, 1);
}

}  // namespace ds::cuda
