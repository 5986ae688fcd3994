#include "kernels/cuda/cuda_check.h"

#include "core/check.h"

namespace ds::cuda {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) fail("{}: CUDA error {}: {}", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

void check_launch(const char* what) {
  check(cudaGetLastError(), what);
}

void require(bool ok, const char* msg) {
  if (!ok) fail("{}", msg);
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

int multiprocessor_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    check(cudaGetDevice(&dev), "multiprocessor count: device");
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev), "multiprocessor count");
    return v;
  }();
  return n;
}

}  // namespace ds::cuda
