#!/usr/bin/env bash
# The GPU correctness tests first (a speed change never ships wrong), memcheck of the new kernels, then the
# whole-model benchmark (bench_gpu_model). Usage, from the repository root on the GPU machine:
#   BIN=<folder with test_kernels_gpu, test_model_gpu, bench_gpu_model> bash bench/gpu_model/run_device.sh [bench args]
set -o pipefail
B=${BIN:-.dev/cuda}  # folder of the prebuilt binaries (+ lib/ with libfmt / libgomp if the machine lacks them)
export LD_LIBRARY_PATH=$PWD/$B/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if ldd $B/test_model_gpu | grep -q "libcublasLt.so.13 => not found"; then
  d=$(dirname "$(find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)"); export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
fi
export DS_TEST_DATA_DIR=$PWD/tests
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv,noheader
$B/test_kernels_gpu --gtest_color=no --gtest_filter='MoeCuda*:ModelOps*:DenseCuda*' >$OUT/kernels.log 2>&1
echo "kernels rc=$?"; grep -E "rel L2|FAILED|PASSED" $OUT/kernels.log | tail -24
$B/test_model_gpu --gtest_color=no >$OUT/model.log 2>&1
echo "model rc=$?"; grep -E "FAILED|PASSED|tests ran" $OUT/model.log | tail -12
if [ "${MEMCHECK:-1}" = 1 ]; then
  timeout 120 compute-sanitizer --tool memcheck $B/test_kernels_gpu --gtest_filter='MoeCuda*:ModelOpsCuda.Mla*' >$OUT/memcheck.log 2>&1
  echo "memcheck kernels rc=$?"; grep -E "ERROR SUMMARY" $OUT/memcheck.log
fi
timeout ${BENCH_TIMEOUT:-420} $B/bench_gpu_model "$@" 2>&1 | tee $OUT/bench.log
echo "bench rc=$?"
