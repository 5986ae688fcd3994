// The `deltaserve logits` job on the device forward: the prompt's logits at every position in one
// prefill, then N greedy decode steps with the model's own state (the LogitsJobResult of
// runner/logits_job.h, computed by gpu/device_model.h on its device).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/device_model.h"
#include "runner/logits_job.h"

namespace ds {

LogitsJobResult run_device_logits_job(const DeviceModel& model, const std::vector<int32_t>& tokens,
                                      int n_decode);

}  // namespace ds
