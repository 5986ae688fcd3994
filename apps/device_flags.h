// --device cpu|cuda and --precision f32|bf16, shared by `logits` and the engine commands: where the
// model runs (the CPU ModelRunner, or the device forward of gpu/device_model.h on the GPU) and, on
// the GPU, the dtype of its GEMM weights (f32: the golden-exact mode; bf16: the checkpoint's).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "gpu/device_model.h"
#include "gpu/gpu_executor.h"

namespace ds::cli {

struct DeviceFlags {
  std::string device = "cpu";
  std::string precision = "f32";
  bool no_cuda_graphs = false;  // decode steps eagerly instead of replaying CUDA graphs
  bool on_cuda() const { return device == "cuda"; }
};

void add_device_flags(CLI::App& cmd, DeviceFlags& f);
// Loads the model onto the GPU (memory plan on stderr). Errors name the flags.
std::unique_ptr<DeviceModel> load_device_model(const std::string& model_dir, const DeviceFlags& f);
// With --device cpu: rejects GPU-only flags.
void check_cpu_device_flags(const DeviceFlags& f);

}  // namespace ds::cli
