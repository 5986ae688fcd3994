#!/usr/bin/env bash
# `deltaserve serve --device cuda` on a checkpoint folder, answered over HTTP (not a test: it needs a GPU):
# starts the server, sends one OpenAI completion (plain and streamed) and one chat completion with curl
# (python3's urllib where curl is missing), prints the transcript and stops the server with SIGTERM.
# Exit status 0 only if every request got HTTP 200 with generated text and the server drained cleanly.
#   bash scripts/gpu_serve_check.sh [deltaserve binary] [model folder] [extra serve flags...]
# (DS_DEVICE=cpu runs the same check against the CPU model.)
set -uo pipefail
ds=${1:-build-cuda/apps/deltaserve}
model=${2:-tests/golden/kimi-linear-tiny}
shift 2 2>/dev/null || shift $#
name=$(basename "$model")
log=$(mktemp)
"$ds" serve --device "${DS_DEVICE:-cuda}" --model "$model" --port 0 --kv-budget-tokens 65536 "$@" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "serving on" "$log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
echo "== server log (start)"
cat "$log"
url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1)
if [ -z "$url" ]; then
  echo "server did not start"
  kill -KILL "$pid" 2>/dev/null
  exit 1
fi
post() {  # path, json body -> prints "HTTP <code>" and the body
  if command -v curl >/dev/null; then
    curl -sS -N -m 60 -w '\nHTTP %{http_code}\n' -H 'Content-Type: application/json' -d "$2" "$url$1"
  else
    python3 - "$url$1" "$2" <<'EOF'
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        print(r.read().decode()); print(f"HTTP {r.status}")
except urllib.error.HTTPError as e:
    print(e.read().decode()); print(f"HTTP {e.code}")
EOF
  fi
}
status=0
run() {  # title, path, body
  echo "== $1: POST $2 $3"
  out=$(post "$2" "$3")
  echo "$out"
  echo "$out" | grep -q '^HTTP 200$' || status=1
  echo "$out" | grep -q '"text"\|"content"' || status=1
}
run "completion" /v1/completions '{"model":"'"$name"'","prompt":"The quick brown fox","max_tokens":16,"temperature":0}'
run "completion, streamed" /v1/completions \
  '{"model":"'"$name"'","prompt":"Hello world","max_tokens":8,"temperature":0,"stream":true}'
run "chat completion" /v1/chat/completions \
  '{"model":"'"$name"'","messages":[{"role":"user","content":"Say hi"}],"max_tokens":12,"temperature":0}'
echo "== GET /v1/models"
if command -v curl >/dev/null; then curl -sS -m 10 "$url/v1/models"; echo; fi
kill -TERM "$pid"
wait "$pid"
rc=$?
echo "== server log (end), exit status $rc"
tail -n +1 "$log" | tail -20
[ $rc -eq 0 ] || status=1
rm -f "$log"
echo "serve check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
