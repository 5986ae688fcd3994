#!/usr/bin/env bash
# Live vs simulated on the GPU (one device call): measures the H200's two ceilings in this process
# (device-to-device copy, bf16 8192^3 linear; bench_gpu_model), writes the hardware profile from them
# ($OUT/h200-measured.json: the data/profiles/hardware/h200.json datasheet profile with the measured
# copy rate as HBM bandwidth, the measured GEMM rate as bf16 peak, efficiencies 1 and no step
# overhead: nothing fitted), writes the synthetic "small" Kimi-Linear checkpoint of `bench forward`
# and runs bench/live_vs_sim.sh with `--device cuda --precision bf16`: `replay --executor model` on
# GpuExecutor (wall clock) next to the simulator with that profile, same trace, scheduler and cache.
# Usage, from the repository root on the GPU machine:
#   BIN=<folder with bench_gpu_model and deltaserve> bash bench/gpu_model/live_vs_sim_gpu.sh [concurrencies, default 1,4,16]
# Environment: DS_HW=<profile> skips the measurement (and then needs no GPU for this step);
# DS_TRACE, DS_KV_BUDGET as bench/live_vs_sim.sh (defaults below: 16 sessions, ~8k-token prompts).
# Logs under $OUT: ceilings.log, h200-measured.json, live_vs_sim.log, replay.json (every run, both sides).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
B=${BIN:-.dev/cuda}
B=$(cd "$B" && pwd)  # absolute: bench/live_vs_sim.sh runs from its own root
OUT=${OUT:-out}
mkdir -p "$OUT"
source "$HERE/device_env.sh"
concs=${1:-1,4,16}
work=${DS_BENCH_DIR:-/tmp/ds-small}
hw=${DS_HW:-}
if [ -z "$hw" ]; then
  # The config only sizes the random model the bench loads after measuring; no decode or prefill runs.
  [ -f "$work/config.json" ] ||
    "$B/deltaserve" bench forward --skip-tiny --work-dir "$work" --prefill 64 --batch 1 --decode-steps 1 >/dev/null
  "$B/bench_gpu_model" --config "$work/config.json" --skip-decode --skip-prefill | tee "$OUT/ceilings.log"
  hw=$OUT/h200-measured.json
  python3 - "$ROOT/data/profiles/hardware/h200.json" "$OUT/ceilings.log" "$hw" <<'PY'
import json, re, sys, time
base, log, out = sys.argv[1:]
p = json.load(open(base))
m = re.search(r"device copy bandwidth (\d+) GB/s \(read \+ write\), bf16 linear 8192\^3 (\d+) TFLOP/s", open(log).read())
if not m:
    sys.exit(f"{log}: no 'device copy bandwidth' line")
bw, rate = float(m.group(1)) * 1e9, float(m.group(2)) * 1e12
when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
p["name"] = "h200-measured"
p["description"] = "NVIDIA H200, the lent GPU: HBM bandwidth and bf16 peak measured (bench_gpu_model ceilings)"
p["hbm_bw_bytes_s"] = bw
p["bf16_flops"] = rate
for k in ("gemm_efficiency", "attention_efficiency", "memory_efficiency"):
    p[k] = 1.0
p["step_overhead_s"] = 0.0
src = p.setdefault("sources", {})
src["hbm_bw_bytes_s"] = f"measured: device-to-device copy of 2 GiB, bytes read + written per second, best of 5 (bench_gpu_model, {when})"
src["bf16_flops"] = f"measured: cuBLASLt bf16 linear 8192^3 (bench_gpu_model, {when})"
for k in ("gemm_efficiency", "attention_efficiency", "memory_efficiency"):
    src[k] = "1: the rates above are measured, not datasheet numbers; not fitted"
src["step_overhead_s"] = "0: not measured (the live-vs-simulated comparison shows what it would be)"
open(out, "w").write(json.dumps(p, indent=2) + "\n")
print(f"wrote {out}: hbm_bw {bw / 1e9:.0f} GB/s, bf16 {rate / 1e12:.0f} TFLOP/s")
PY
fi
# 16 sessions so that 16 lanes are busy; prompts twice the CPU run's, KV budget scaled with them
# (~4x the distinct tokens, so the cache still does not hold them all).
DS_BIN=$B/deltaserve DS_BENCH_DIR=$work DS_HW=$hw DS_BENCH_OUT=/tmp/ds-live-vs-sim \
  DS_TRACE=${DS_TRACE:-synthetic:sessions=16,turns=4,input=8192,output=32,system=1024,think=0,seed=1} \
  DS_KV_BUDGET=${DS_KV_BUDGET:-262144} DS_REPLAY_ARGS="${DS_REPLAY_ARGS:---device cuda --precision bf16}" \
  bash "$ROOT/bench/live_vs_sim.sh" "$concs" 2>&1 | tee "$OUT/live_vs_sim.log"
cp /tmp/ds-live-vs-sim/replay.json "$OUT/"
