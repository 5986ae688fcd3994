#include "device_flags.h"

#include <iostream>

#include "core/check.h"

namespace ds::cli {

void add_device_flags(CLI::App& cmd, DeviceFlags& f) {
  cmd.add_option("--device", f.device, "where the model runs: cpu | cuda (one GPU)")->capture_default_str();
  cmd.add_option("--precision", f.precision,
                 "GPU GEMM weights: f32 (golden-exact) | bf16 (with --device cuda)")
      ->capture_default_str();
  cmd.add_flag(
      "--no-cuda-graphs", f.no_cuda_graphs,
      "with --device cuda: run decode steps eagerly instead of replaying one CUDA graph per batch size");
}

void check_cpu_device_flags(const DeviceFlags& f) {
  DS_CHECK(f.device == "cpu" || f.device == "cuda", "--device must be 'cpu' or 'cuda', got '{}'", f.device);
  DS_CHECK(f.precision == "f32", "--precision {} needs --device cuda (the CPU model computes in f32)",
           f.precision);
  DS_CHECK(!f.no_cuda_graphs, "--no-cuda-graphs needs --device cuda");
}

std::unique_ptr<DeviceModel> load_device_model(const std::string& model_dir, const DeviceFlags& f) {
  DS_CHECK(f.precision == "f32" || f.precision == "bf16", "--precision must be 'f32' or 'bf16', got '{}'",
           f.precision);
  DS_CHECK(cuda_available(),
           "--device cuda: no usable GPU (a build without -DDS_CUDA=ON, or no device/driver)");
  DeviceModelOptions opt;
  opt.device = Device::Cuda;
  opt.precision = f.precision == "bf16" ? Precision::BF16 : Precision::F32;
  opt.exact_kda = opt.precision == Precision::F32;
  opt.decode_graphs = !f.no_cuda_graphs;
  return DeviceModel::load(model_dir, opt, &std::cerr);
}

}  // namespace ds::cli
