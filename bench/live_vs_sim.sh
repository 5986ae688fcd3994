#!/usr/bin/env bash
# Live-vs-simulated benchmark (not a test): one scaled-down agentic trace replayed through the real
# CPU engine (`replay --executor model`, wall clock) and, with the same workload, scheduler and cache
# configuration, through the simulator with this machine's measured hardware profile
# (`--compare-sim`), at each concurrency. Prints the side-by-side table (realized hit rate, TTFT
# p50/p90, TPOT p50, output tok/s, live / simulated ratios). Results: docs/perf.md.
#   bash bench/live_vs_sim.sh [concurrency list, default 1,2,4]
# Environment:
#   DS_BIN        deltaserve binary (default build/apps/deltaserve)
#   DS_BENCH_DIR  the synthetic "small" checkpoint of `bench forward` (written there if missing;
#                 default /tmp/ds-bench-small)
#   DS_HW         hardware profile (default data/profiles/hardware/cpu-dev-2c.json); DS_REMEASURE=1
#                 measures it again first (`deltaserve bench floor --out`)
#   DS_TRACE      trace spec (default below: 8 sessions, ~1.5k-9k-token prompts, 32 output tokens)
#   DS_KV_BUDGET  device KV budget in tokens (default 65536)
#   DS_REPLAY_ARGS  more replay flags, e.g. "--device cuda --precision bf16" (bench/gpu_model/live_vs_sim_gpu.sh)
#   OMP_WAIT_POLICY  default passive: on a shared machine a spinning OpenMP thread waits for a
#                 descheduled peer at every fork/join (docs/perf.md)
set -euo pipefail
cd "$(dirname "$0")/.."
ds=${DS_BIN:-build/apps/deltaserve}
concs=${1:-1,2,4}
work=${DS_BENCH_DIR:-/tmp/ds-bench-small}
hw=${DS_HW:-data/profiles/hardware/cpu-dev-2c.json}
trace=${DS_TRACE:-synthetic:sessions=8,turns=4,input=4096,output=32,system=1024,think=0,seed=1}
out=${DS_BENCH_OUT:-replay-out/live_vs_sim}
budget=${DS_KV_BUDGET:-65536}
read -r -a extra <<<"${DS_REPLAY_ARGS:-}"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -f "$work/config.json" ] ||
  "$ds" bench forward --skip-tiny --work-dir "$work" --prefill 64 --batch 1 --decode-steps 1 >/dev/null
if [ "${DS_REMEASURE:-0}" = 1 ]; then "$ds" bench floor --rounds 3 --out "$hw"; fi
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
# Same cache for both: interval retention, a 64k-token device budget by default (the trace's ~70k distinct
# tokens plus KDA checkpoints do not all fit), 64-token pages; the bench harness sends every
# session's turns once from t = 0, so both sides replay exactly the same requests.
"$ds" replay --executor model --model "$work" --compare-sim "$hw" --trace "$trace" --concurrency "$concs" \
  --harness bench --kv-budget-tokens "$budget" --page-tokens 64 --step-tokens 8192 --out "$out" ${extra[@]+"${extra[@]}"}
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
