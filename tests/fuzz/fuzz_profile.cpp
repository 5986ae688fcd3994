// Fuzz target: arbitrary bytes as a hardware profile JSON and as a model config.json, then the
// model profile, memory plan and one cost-model step. Only ds::Error may escape the parsers.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "plan/cost_model.h"
#include "plan/planner.h"

namespace {

ds::HardwareProfile fixed_hardware() {
  ds::HardwareProfile hw;
  hw.name = "fuzz";
  hw.hbm_bytes = 80e9;
  hw.hbm_bw_bytes_s = hw.bf16_flops = hw.fp8_flops = hw.nvlink_bw_bytes_s = hw.host_link_bw_bytes_s = 1e12;
  return hw;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    ds::HardwareProfile::from_json(j, "fuzz");
  } catch (const ds::Error&) {
  }
  try {
    const ds::ModelConfig config = ds::ModelConfig::from_json(j, "fuzz");
    const ds::ModelProfile model = ds::ModelProfile::from_config(config, "fuzz");
    ds::PlanOptions opt;
    opt.gpus = opt.tp = 1;
    opt.throughput_prompt_tokens = {4096};
    ds::make_plan(model, fixed_hardware(), opt);
    const ds::CostModel cost(model, fixed_hardware(), ds::CostOptions{.tp = 1, .kv_dtype_bytes = 1});
    cost.step(ds::StepWork{{ds::SeqWork{100, 1000, 1, 1, 1000}, ds::SeqWork{1, 5000, 0, 0, 0}}});
  } catch (const ds::Error&) {
  }
  return 0;
}
