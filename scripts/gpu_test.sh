#!/usr/bin/env bash
# GPU tests (the ctest label "gpu"): builds with -DDS_CUDA=ON into build-cuda/ and runs them.
#   bash scripts/gpu_test.sh              # configure + build + ctest -L gpu
#   bash scripts/gpu_test.sh DIR          # run the prebuilt GPU test binaries found under DIR
#                                         # (for a GPU machine without the build dependencies;
#                                         # libcublasLt.so.13 must be on LD_LIBRARY_PATH; the golden
#                                         # fixtures are read from this checkout's tests/)
# Without a CUDA device every GPU test reports SKIPPED with the reason; exit status 0.
set -euo pipefail
cd "$(dirname "$0")/.."
export DS_TEST_DATA_DIR="$PWD/tests"
if [ $# -ge 1 ]; then
  status=0
  while IFS= read -r bin; do
    echo "== $bin"
    "$bin" --gtest_color=no || status=1
  done < <(find "$1" -type f -name 'test_*_gpu' -perm -u+x | sort)
  exit $status
fi
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS_CUDA=ON >/dev/null
cmake --build build-cuda -j"$(nproc)" --target test_kernels_gpu test_model_gpu
ctest --test-dir build-cuda -L gpu --output-on-failure
