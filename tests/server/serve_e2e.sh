#!/usr/bin/env bash
# End-to-end test of `deltaserve serve` on the tiny golden checkpoint (ctest: ServeEndToEnd):
#   1. the npm `openai` client (tests/node/openai_client_test.cjs): models, chat (non-stream and
#      stream), completions with token ids, a prefix-sharing request with cached_tokens > 0 and
#      exactly the greedy tokens of a cold run (`deltaserve generate` on a fresh engine), errors;
#   2. `replay --endpoint` against the server gives the realized hit rate that the in-process
#      `replay --executor model` reports for the same trace and cache settings;
#   3. SIGTERM drains and exits 0, also with a streamed request in flight, which gets all its
#      tokens and [DONE].
# Every server binds a free loopback port (--port 0) and is always stopped (trap).
# Usage: serve_e2e.sh <deltaserve binary> <source dir>
set -euo pipefail
ds=$1
src=$2
model=$src/tests/golden/kimi-linear-tiny
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
cache_flags=(--retention every-block --kv-budget-tokens 65536 --page-tokens 64)

start_server() {  # sets pid and url
  "$ds" serve --model "$model" --host 127.0.0.1 --port 0 "${cache_flags[@]}" >"$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q "serving on" "$tmp/serve.log" && break
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log"; echo "serve_e2e: server died at start"; exit 1; }
    sleep 0.1
  done
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/serve.log" | head -1)
  [ -n "$url" ] || { cat "$tmp/serve.log"; echo "serve_e2e: no URL"; exit 1; }
}

stop_server() {  # SIGTERM must drain and exit 0
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  pid=""
  grep -q "stopped" "$tmp/serve.log" || { cat "$tmp/serve.log"; echo "serve_e2e: no clean stop"; exit 1; }
  [ "$rc" -eq 0 ] || { cat "$tmp/serve.log"; echo "serve_e2e: server exited $rc after SIGTERM"; exit 1; }
}

# Prompts: A (200 ids), B = A's first 192 ids + 40 others; cold greedy continuation of B.
prompt_a=$(seq 0 199 | awk '{print ($1 * 37 + 11) % 500}' | paste -sd,)
prompt_b=$(echo "$prompt_a" | cut -d, -f1-192),$(seq 0 39 | awk '{print ($1 * 13 + 7) % 500}' | paste -sd,)
cold_b=$("$ds" generate --model "$model" --tokens "$prompt_b" --max-tokens 8 --ignore-eos "${cache_flags[@]}")
echo "{\"prompt_a\": [$prompt_a], \"prompt_b\": [$prompt_b], \"cold_b\": [$cold_b], \"max_tokens\": 8}" >"$tmp/cold.json"

start_server
node "$src/tests/node/openai_client_test.cjs" "$url" "$tmp/cold.json"
stop_server

# replay --endpoint vs in-process replay --executor model: same trace, seed, cache settings.
trace="synthetic:sessions=3,turns=3,input=200,output=2,system=128,think=0,seed=5"
start_server
"$ds" replay --endpoint "$url" --trace "$trace" --concurrency 1 --max-output-tokens 3 --json >"$tmp/endpoint.json"
stop_server
"$ds" replay --executor model --model "$model" --trace "$trace" --concurrency 1 --max-output-tokens 3 \
  "${cache_flags[@]}" --json >"$tmp/inprocess.json"
node -e '
const fs = require("fs");
const e = JSON.parse(fs.readFileSync(process.argv[1])).runs[0], m = JSON.parse(fs.readFileSync(process.argv[2])).runs[0];
console.log(`endpoint: hit ${e.realized_hit_rate} (${e.n_hit_tokens}/${e.n_prompt_tokens}), errors ${e.n_errors}; ` +
            `in-process: hit ${m.realized_hit_rate} (${m.n_hit_tokens}/${m.n_prompt_tokens})`);
const ok = e.n_errors === 0 && e.n_requests === m.n_requests && e.n_hit_tokens === m.n_hit_tokens &&
           e.n_prompt_tokens === m.n_prompt_tokens && e.n_hit_tokens > 0;
process.exit(ok ? 0 : 1);' "$tmp/endpoint.json" "$tmp/inprocess.json"

# SIGTERM with a streamed request in flight: the request completes, then the server exits 0.
start_server
node -e '
const [url, started] = process.argv.slice(1);
(async () => {
  const r = await fetch(url + "/v1/completions", {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({prompt: [1, 2, 3, 4, 5], max_tokens: 3000, ignore_eos: true, stream: true,
                          stream_options: {include_usage: true}})});
  const reader = r.body.getReader(), dec = new TextDecoder();
  let body = "", signalled = false;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    body += dec.decode(value);
    if (!signalled) { require("fs").writeFileSync(started, "1"); signalled = true; }
  }
  const usage = body.split("\n\n").filter(e => e.startsWith("data: {")).map(e => JSON.parse(e.slice(6)))
                    .filter(j => j.usage).map(j => j.usage)[0];
  const ok = body.includes("data: [DONE]") && usage && usage.completion_tokens === 3000;
  console.log(`in flight at SIGTERM: ${usage ? usage.completion_tokens : "no"} tokens, [DONE] ${body.includes("data: [DONE]")}`);
  process.exit(ok ? 0 : 1);
})().catch(e => { console.log(e); process.exit(1); });' "$url" "$tmp/started" &
client=$!
for _ in $(seq 1 300); do [ -f "$tmp/started" ] && break; sleep 0.1; done
[ -f "$tmp/started" ] || { cat "$tmp/serve.log"; echo "serve_e2e: the in-flight request never started"; exit 1; }
stop_server
wait "$client" || { cat "$tmp/serve.log"; echo "serve_e2e: the in-flight request was not drained"; exit 1; }
grep -q "draining 1 in-flight" "$tmp/serve.log" || { cat "$tmp/serve.log"; echo "serve_e2e: nothing in flight at SIGTERM"; exit 1; }
echo "serve_e2e: 4 passed, 0 failed"
