#!/usr/bin/env bash
# One device call for the decode rounds: the GPU kernel and model tests, memcheck of the decode kernels,
# Nsight Compute per-kernel profiles (time and DRAM bytes, each kernel alone with its caches flushed)
# of one graph-replayed batch-1 decode step per context and variant, summarised against each kernel's
# bytes / copy-bandwidth floor (ncu_summary.py), then the decode table. Usage, on the GPU machine:
#   BIN=<folder with bin.tar.xz (bench_gpu_model, test_kernels_gpu, test_model_gpu) and lib.tar.xz> \
#     [PROF_CTX="4096 32768"] [PROF_VARIANTS=graphs-f32mla,graphs] [BENCH_VARIANTS=...] [BENCH_BATCH=1,8,64] \
#     [MEMF=<gtest filter>] [TESTS=0] bash bench/gpu_model/decode_profile.sh
# Logs and profile_<ctx>.txt go to $OUT.
set -o pipefail
B=${BIN:-.dev/cuda}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-out}
mkdir -p "$OUT"
tar xJf $B/bin.tar.xz -C $B && mkdir -p $B/lib && tar xJf $B/lib.tar.xz -C $B/lib
export LD_LIBRARY_PATH=$PWD/$B/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if ldd $B/bench_gpu_model | grep -q "libcublasLt.so.13 => not found"; then
  d=$(dirname "$(find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)"); export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH; fi
export DS_TEST_DATA_DIR=$PWD/tests PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [ "${TESTS:-1}" = 1 ]; then
$B/test_kernels_gpu --gtest_color=no --gtest_filter="${KERNEL_TESTS:-MoeCuda*:ModelOps*:DenseCuda*}" >$OUT/kernels.log 2>&1
echo "kernels rc=$?"; grep -E "FAILED|PASSED|tests ran" $OUT/kernels.log | tail -6; grep "bf16 tensor" $OUT/kernels.log | tr -s ' ' | tr '\n' ';'; echo
$B/test_model_gpu --gtest_color=no >$OUT/model.log 2>&1
echo "model rc=$?"; grep -E "FAILED|PASSED|tests ran" $OUT/model.log | tail -6
timeout 100 compute-sanitizer --tool memcheck $B/test_kernels_gpu --gtest_filter="${MEMF:-ModelOpsCuda.Mla*}" >$OUT/memcheck.log 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY" $OUT/memcheck.log
fi
nv=$(echo ${PROF_VARIANTS:-graphs-f32mla,graphs} | tr ',' '\n' | wc -l)
for ctx in ${PROF_CTX:-4096 32768}; do
  timeout 150 ncu --clock-control none --profile-from-start off \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv --launch-count 4000 \
    $B/bench_gpu_model --profile --batch 1 --context $ctx --variants ${PROF_VARIANTS:-graphs-f32mla,graphs} \
    --decode-steps 1 --skip-prefill >/tmp/ncu_$ctx.csv 2>/tmp/ncu_$ctx.err
  echo "ncu $ctx rc=$?"; tail -2 /tmp/ncu_$ctx.err
  bw=$(grep -o "copy bandwidth [0-9]*" /tmp/ncu_$ctx.csv | grep -o "[0-9]*$")
  python3 $HERE/ncu_summary.py --bw ${bw:-4200} --split $nv /tmp/ncu_$ctx.csv > $OUT/profile_$ctx.txt
  grep -v '^"' /tmp/ncu_$ctx.csv | grep -v "^==" | tail -4
done
(cd /tmp && tar czf $OUT/ncu.tar.gz ncu_*.csv)
for f in $OUT/profile_*.txt; do echo "== $f"; cut -c1-60,100-170 $f | head -${PROF_LINES:-14}; done
timeout 300 $B/bench_gpu_model --skip-prefill --decode-steps 8 --batch ${BENCH_BATCH:-1,8,64} --context 4096,32768 \
  --variants ${BENCH_VARIANTS:-graphs-f32mla,graphs} 2>&1 | tee $OUT/bench.log
echo "bench rc=$?"
