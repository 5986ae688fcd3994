#!/usr/bin/env bash
# One device call: the GPU correctness tests first (a speed change never ships wrong), memcheck of the
# new kernels, `serve --device cuda` answering OpenAI requests (scripts/gpu_serve_check.sh), an optional
# per-kernel profile of one decode step and one prefill chunk (Nsight Compute), then the whole-model
# benchmark (bench_gpu_model). Usage, from the repository root on the GPU machine:
#   BIN=<folder with test_kernels_gpu, test_model_gpu, bench_gpu_model, deltaserve> \
#     [MEMCHECK=0] [SERVE=0] [PROFILE=1] bash bench/gpu_model/run_device.sh [bench args]
# Logs go to $OUT (kernels.log, model.log, memcheck.log, serve.log, ncu.log, profile.txt, ncu.tar.gz, bench.log).
set -o pipefail
B=${BIN:-.dev/cuda}  # folder of the prebuilt binaries (+ lib/ with the shared libraries the machine lacks)
HERE=$(cd "$(dirname "$0")" && pwd)
SERVE_CHECK=${SERVE_CHECK:-$HERE/../../scripts/gpu_serve_check.sh}
OUT=${OUT:-out}
mkdir -p "$OUT"
source "$HERE/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv,noheader
$B/test_kernels_gpu --gtest_color=no --gtest_filter="${KERNEL_TESTS:-MoeCuda*:ModelOps*:DenseCuda*}" >$OUT/kernels.log 2>&1
echo "kernels rc=$?"; grep -E "rel L2|FAILED|PASSED" $OUT/kernels.log | tail -24
$B/test_model_gpu --gtest_color=no >$OUT/model.log 2>&1
echo "model rc=$?"; grep -E "FAILED|PASSED|tests ran" $OUT/model.log | tail -12
if [ "${MEMCHECK:-1}" = 1 ]; then
  timeout 120 compute-sanitizer --tool memcheck $B/test_kernels_gpu --gtest_filter="${MEMCHECK_TESTS:-MoeCuda*:ModelOpsCuda.Mla*}" >$OUT/memcheck.log 2>&1
  echo "memcheck kernels rc=$?"; grep -E "ERROR SUMMARY" $OUT/memcheck.log
fi
if [ "${SERVE:-1}" = 1 ]; then
  { timeout 120 bash $SERVE_CHECK $B/deltaserve tests/golden/kimi-linear-tiny
    echo "== bf16"; timeout 120 bash $SERVE_CHECK $B/deltaserve tests/golden/kimi-linear-tiny --precision bf16; } >$OUT/serve.log 2>&1
  echo "serve rc=$?"; grep -E "serve check|HTTP [0-9]" $OUT/serve.log
fi
if [ "${PROFILE:-0}" = 1 ]; then
  # Every kernel of one graph-replayed decode step (batch 1, 4k context) and the first PROFILE_LAUNCHES
  # kernels of the first 8192-token prefill chunk, each timed alone (gpu__time_duration).
  for part in decode prefill; do
    if [ $part = decode ]; then args="--batch ${PROFILE_BATCH:-1} --context 4096 --variants graphs --decode-steps 1 --skip-prefill"
    else args="--skip-decode --prefill 8192"; fi
    timeout ${PROFILE_TIMEOUT:-150} ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum \
      --csv --launch-count ${PROFILE_LAUNCHES:-3000} $B/bench_gpu_model --profile $args >/tmp/ncu_$part.csv 2>>$OUT/ncu.log
    echo "ncu $part rc=$?"; tail -2 $OUT/ncu.log
  done
  (cd /tmp && python3 $HERE/ncu_summary.py ncu_decode.csv ncu_prefill.csv >$OUT/profile.txt
    tar -czf $OUT/ncu.tar.gz ncu_decode.csv ncu_prefill.csv)
  cat $OUT/profile.txt | cut -c1-150 | head -80
fi
timeout ${BENCH_TIMEOUT:-420} $B/bench_gpu_model "$@" 2>&1 | tee $OUT/bench.log
echo "bench rc=$?"
