#!/usr/bin/env bash
# KDA prefill on a GPU machine in one go. Binaries are built elsewhere (build-cuda, docs/perf.md) and
# brought in one folder with this directory's bench_kda.py and fla's sources:
#   D=<folder with test_kernels_gpu, libds_kda_capi.so, bench_kda.py, fla_src/fla, lib/> \
#     STEPS=tests,table,memcheck bash bench/kda_gpu/prefill_device.sh   # from the repository root
# Steps (STEPS, comma-separated, run in the order given):
#   tests     the KDA GPU tests ($TESTS_FILTER, default KdaCuda.*; log tests$TESTS_TAG.log)
#   memcheck  compute-sanitizer memcheck of prefill tests ($MEMCHECK_FILTER)
#   sweep     deltaserve alone under each setting of $SWEEP (bench_kda.py --env-sweep), $SWEEP_SHAPES
#   phases    one segment with DS_KDA_TIMING=1 at $SWEEP_SHAPES (default T = 32768), phase times
#   ours      deltaserve alone: the prefill table and the checkpoint overhead (and $LIB_BASE, another
#             build of the library, on the same inputs)
#   fla1      fla once at softplus H = 32, T = 8192 (how long its compile and autotuning take)
#   flawarm   fla's Triton kernels compiled for every (gate, H) and varlen set of the table, in
#             parallel processes (gates of GATES); their autotuning choices then dropped
#   table     the prefill table side by side with fla: both gates, H 32/64/96 × T 8k/32k/64k and the
#             16-sequence varlen batch ($TABLE_GATES, default safe,softplus; $LIB_BASE timed beside;
#             $ROUNDS x $REPS steps, each timing fla, ours and base once in an order rotated every step,
#             medians of all samples)
#   ncu       Nsight Compute on kernel $NCU_KERNEL (default kda_prep), one call per gate of $NCU_GATES,
#             H = $NCU_H, T = $NCU_T (prof_prefill.py): details page and per-SASS-instruction counts
# Logs (at most 8 files) under $OUT. fla's Triton kernels compile and autotune on first use; a cache from an
# earlier run ($D/triton_cache.tgz, or the parts $D/triton_cache.tar.xz.*) is unpacked first and the cache after the run saved to
# $OUT/triton_cache.tar.xz.* (SAVE_CACHE=1; join the parts with cat; FLA_CACHE_RESULTS=1 keeps the
# autotuning choices in it too).
set -o pipefail
D=${D:-.dev/cudak}
OUT=${OUT:-out}
STEPS=${STEPS:-tests,table,memcheck}
mkdir -p "$OUT"
for t in "$D"/*.tar.xz; do [ -f "$t" ] && tar -xJf "$t" -C "$D"; done
for l in "$D"/lib/*.so*; do [ -f "$l" ] && ldconfig -p | grep -q "[[:space:]]$(basename "$l") " && rm -f "$l"; done
export LD_LIBRARY_PATH=$PWD/$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if ldd "$D/test_kernels_gpu" | grep -q "libcublasLt.so.13 => not found"; then
  d=$(dirname "$(find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
fi
export DS_TEST_DATA_DIR=$PWD/tests PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=/tmp/triton_cache FLA_CACHE_RESULTS=1
mkdir -p "$TRITON_CACHE_DIR"
[ -f "$D/triton_cache.tgz" ] && tar -xzf "$D/triton_cache.tgz" -C "$TRITON_CACHE_DIR"
ls "$D"/triton_cache.tar.xz.* >/dev/null 2>&1 && cat "$D"/triton_cache.tar.xz.* | tar -xJf - -C "$TRITON_CACHE_DIR"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
B=(python3 "$D/bench_kda.py" --lib "$D/libds_kda_capi.so" --fla "$D/fla_src")
t0=$SECONDS
step_tests() {
  timeout "${TESTS_S:-120}" "$D/test_kernels_gpu" --gtest_color=no --gtest_filter="${TESTS_FILTER:-KdaCuda.*}" \
    >"$OUT/tests${TESTS_TAG:-}.log" 2>&1
  echo "tests rc=$? ($((SECONDS - t0)) s)"
  grep -E "kda_prefill|FAILED|PASSED|SKIPPED|Failure" "$OUT/tests${TESTS_TAG:-}.log" | cut -c1-150
}
step_memcheck() {
  timeout "${MEMCHECK_S:-60}" compute-sanitizer --tool memcheck "$D/test_kernels_gpu" --gtest_color=no \
    --gtest_filter="${MEMCHECK_FILTER:-KdaCuda.PrefillSafeGateAwkward*:KdaCuda.PrefillCheckpointsOffTheChunkGrid:KdaCuda.PrefillWholeKey*:KdaCuda.PrefillSegmentsGiveIdenticalBits}" \
    >"$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? ($((SECONDS - t0)) s)"
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log"
}
step_sweep() {
  timeout "${SWEEP_S:-120}" "${B[@]}" --parts envsweep --ours-only --gates "${GATES:-safe,softplus}" \
    --env-sweep "$SWEEP" ${SWEEP_SHAPES:+--sweep-shapes "$SWEEP_SHAPES"} --reps "${REPS:-7}" 2>&1 | tee "$OUT/sweep.log"
  echo "sweep rc=$? ($((SECONDS - t0)) s)"
}
step_phases() {
  timeout "${PHASES_S:-60}" "${B[@]}" --parts envsweep --ours-only --gates "${GATES:-safe,softplus}" \
    --env-sweep "${PHASE_SWEEP:-DS_KDA_SEGMENTS=1,DS_KDA_TIMING=1}" \
    --sweep-shapes "${SWEEP_SHAPES:-32:32768,64:32768,96:32768}" --reps 3 >"$OUT/phases.log" 2>&1
  echo "phases rc=$? ($((SECONDS - t0)) s)"
  grep -v "^kda_prefill timing" "$OUT/phases.log" | tail -n +4
  grep "^kda_prefill timing" "$OUT/phases.log" | uniq -c | head -40
}
step_ours() {
  timeout "${OURS_S:-120}" "${B[@]}" --parts prefill,checkpoints --ours-only --gates safe,softplus \
    --shapes grid,varlen --reps "${REPS:-7}" ${LIB_BASE:+--lib-base "$LIB_BASE"} --out "$OUT/ours.json" 2>&1 |
    tee "$OUT/ours.log"
  echo "ours rc=$? ($((SECONDS - t0)) s)"
}
step_fla1() {
  timeout "${FLA1_S:-200}" "${B[@]}" --parts prefill --gates softplus --shapes grid --quick --reps 3 2>&1 |
    tee "$OUT/fla1.log"
  echo "fla1 rc=$? ($((SECONDS - t0)) s)"
}
step_flawarm() {  # one process per (gate, H) and per gate's varlen batch, in parallel
  local g H pids=() gates=${GATES:-safe,softplus}
  for g in ${gates//,/ }; do
    for H in 32 64 96; do
      timeout "${WARM_S:-300}" "${B[@]}" --parts flawarm --gates "$g" --shapes grid --heads "$H" >"/tmp/warm_${g}_$H.log" 2>&1 &
      pids+=($!)
    done
    timeout "${WARM_S:-300}" "${B[@]}" --parts flawarm --gates "$g" --shapes varlen >"/tmp/warm_${g}_varlen.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  cat /tmp/warm_*.log >"$OUT/warm.log"
  grep "fla warm" "$OUT/warm.log"
  # The autotuning choices were made with the GPU shared: drop them, keep the compiled kernels, so
  # that the table's first call of each set tunes again on a quiet GPU.
  find "$TRITON_CACHE_DIR" -name '*.autotune.json' -delete
  echo "flawarm ($((SECONDS - t0)) s)"
}
step_table() {
  timeout "${TABLE_S:-420}" "${B[@]}" --parts prefill --gates "${TABLE_GATES:-safe,softplus}" --shapes grid,varlen \
    --reps "${REPS:-7}" --prefill-rounds "${ROUNDS:-1}" ${LIB_BASE:+--lib-base "$LIB_BASE"} --out "$OUT/prefill.json" 2>&1 |
    tee "$OUT/prefill.log"
  echo "table rc=$? ($((SECONDS - t0)) s)"
}
step_ncu() {  # one process, one launch per gate (one segment); the SASS page as CSV (stall samples, executed instructions)
  DS_KDA_SEGMENTS=1 timeout "${NCU_S:-90}" ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
    --section InstructionStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section Occupancy --section SourceCounters -k "regex:${NCU_KERNEL:-kda_prep}" -f -o /tmp/ncu_prof \
    python3 "$D/prof_prefill.py" --lib "$D/libds_kda_capi.so" --gates "${NCU_GATES:-safe,softplus}" --calls 1 \
    --heads "${NCU_H:-64}" --tokens "${NCU_T:-8192}" >"$OUT/ncu.log" 2>&1
  echo "ncu rc=$? ($((SECONDS - t0)) s)"
  ncu -i /tmp/ncu_prof.ncu-rep --page details >>"$OUT/ncu.log" 2>&1
  ncu -i /tmp/ncu_prof.ncu-rep --page source --csv --print-source sass >"$OUT/ncu_sass.csv" 2>&1
  grep -E "kda_|Duration|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc A|Issue Slots Busy|No Eligible" "$OUT/ncu.log"
}
for step in ${STEPS//,/ }; do
  if declare -F "step_$step" >/dev/null; then "step_$step"; else echo "unknown step $step"; fi
done
if [ -n "${SAVE_CACHE:-}" ]; then  # Triton's binaries, metadata and autotuning choices, in parts under 16 MiB
  (cd "$TRITON_CACHE_DIR" && find . -name '*.cubin' -o -name '*.json' -o -name '*.so' | tar -cJf - -T -) | split -b 15m - "$OUT/triton_cache.tar.xz."
fi
ls -la "$OUT"
