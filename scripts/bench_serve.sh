#!/usr/bin/env bash
# Load benchmark of `deltaserve serve` (not a test): a random-weight Kimi-Linear checkpoint (default
# the tiny golden one; `small` = the 1.3 GB config `deltaserve bench forward --work-dir` writes),
# `replay --endpoint` at each concurrency against one server, and the same trace through the
# in-process engine (`replay --executor model`) for the HTTP overhead. Prints one table row per
# concurrency: errors, TTFT/TPOT, throughput, hit rate, and the server's peak RSS (VmHWM).
#   bash scripts/bench_serve.sh [concurrency list, default 1,2,4,8,16,32] [trace spec] [model dir|small]
set -euo pipefail
cd "$(dirname "$0")/.."
ds=${DS_BIN:-build/apps/deltaserve}
concs=${1:-1,2,4,8,16,32}
trace=${2:-synthetic:sessions=32,turns=2,input=128,output=16,system=64,think=0,seed=7,context=256}
work=${3:-tests/golden/kimi-linear-tiny}
flags=(--retention every-block --kv-budget-tokens 262144 --page-tokens 64)  # same for serve and replay
out=${DS_BENCH_OUT:-replay-out/bench_serve}
mkdir -p "$out"
if [ "$work" = small ]; then
  work=${DS_BENCH_DIR:-/tmp/ds-bench-small}
  [ -f "$work/config.json" ] ||
    "$ds" bench forward --skip-tiny --work-dir "$work" --prefill 64 --batch 1 --decode-steps 1 >/dev/null
fi
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
: >"$tmp/serve.log"
"$ds" serve --model "$work" --port 0 "${flags[@]}" --http-threads 64 >"$tmp/serve.log" 2>&1 &
pid=$!
until grep -q "serving on" "$tmp/serve.log"; do
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
  sleep 0.2
done
url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/serve.log" | head -1)
"$ds" replay --endpoint "$url" --trace "$trace" --concurrency "$concs" --json >"$out/endpoint.json"
rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
kill -TERM "$pid"
wait "$pid"
pid=""
"$ds" replay --executor model --model "$work" --trace "$trace" --concurrency "$concs" "${flags[@]}" --json \
  >"$out/inprocess.json"
node -e '
const fs = require("fs");
const e = JSON.parse(fs.readFileSync(process.argv[1])).runs, m = JSON.parse(fs.readFileSync(process.argv[2])).runs;
const rss = Number(process.argv[3]) / 1024;
const f = (x, d = 1) => x.toFixed(d);
console.log("| conc | errors | requests | TTFT p50 / p90 (ms) | TPOT p50 (ms) | out tok/s | hit % | in-process TTFT p50 (ms) | in-process TPOT p50 (ms) | in-process tok/s | HTTP/in-process tok/s |");
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of e) {
  const p = m.find((x) => x.concurrency === r.concurrency) || {};
  console.log(`| ${r.concurrency} | ${r.n_errors} | ${r.n_requests} | ${f(r.ttft_p50_s * 1e3)} / ${f(r.ttft_p90_s * 1e3)} | ` +
    `${f(r.tpot_p50_s * 1e3, 2)} | ${f(r.output_tok_s_per_gpu)} | ${f(100 * r.realized_hit_rate)} | ` +
    `${f((p.ttft_p50_s || 0) * 1e3)} | ${f((p.tpot_p50_s || 0) * 1e3, 2)} | ${f(p.output_tok_s_per_gpu || 0)} | ` +
    `${f(r.output_tok_s_per_gpu / (p.output_tok_s_per_gpu || 1), 2)} |`);
}
console.log(`server peak RSS (VmHWM): ${f(rss)} MiB`);' "$out/endpoint.json" "$out/inprocess.json" "$rss_kb"
