// A projection that is either full rank (`full` [out, in]) or low rank (b·a: `a` [r, in],
// `b` [out, r]), optionally with an RMSNorm between the factors: shared by the KDA output gate and
// the MLA q-LoRA query. Internal to layers/.
#pragma once

#include <cstdint>

#include "core/weight_view.h"

namespace ds {

// Names used in errors; `both_set` is the error when the full-rank weight and a/b are all present.
struct RankedProjNames {
  const char* both_set;
  const char* full;
  const char* a;
  const char* b;
};

// Checks that exactly one form is set and that its shapes map in -> out; throws naming the weight.
void check_full_or_low_rank(const WeightView& full, const WeightView& a, const WeightView& b, int64_t out,
                            int64_t in, const RankedProjNames& names);

// y f32 [T, out] = full·x, or b·norm(a·x) with an RMSNorm (weight norm_w f32 [r], eps) between the
// low-rank factors when norm_w != nullptr. x f32 [T, in].
void project_full_or_low_rank(const WeightView& full, const WeightView& a, const WeightView& b,
                              const float* norm_w, float eps, const float* x, int64_t T, float* y);

}  // namespace ds
