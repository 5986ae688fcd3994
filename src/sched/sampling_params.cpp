#include "sched/sampling_params.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace ds {

bool SamplingParams::is_stop(int32_t token) const {
  return std::find(stop_token_ids.begin(), stop_token_ids.end(), token) != stop_token_ids.end();
}

void SamplingParams::validate() const {
  DS_CHECK(std::isfinite(temperature) && temperature >= 0.0f, "sampling: temperature must be >= 0, got {}",
           temperature);
  DS_CHECK(top_k >= 0, "sampling: top_k must be >= 0, got {}", top_k);
  DS_CHECK(std::isfinite(top_p) && top_p > 0.0f && top_p <= 1.0f, "sampling: top_p must be in (0, 1], got {}",
           top_p);
  DS_CHECK(std::isfinite(min_p) && min_p >= 0.0f && min_p <= 1.0f,
           "sampling: min_p must be in [0, 1], got {}", min_p);
  for (int32_t t : stop_token_ids) DS_CHECK(t >= 0, "sampling: stop token id {} is negative", t);
  DS_CHECK(logprobs >= -1 && logprobs <= kMaxLogprobs, "sampling: logprobs must be in [-1, {}], got {}",
           kMaxLogprobs, logprobs);
}

}  // namespace ds
