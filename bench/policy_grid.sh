#!/usr/bin/env bash
# The full policy grid of docs/policy.md: every retention / eviction anchor, the emulated vLLM and
# SGLang caches and boundary-aware, on four traces, two deployments, GPU-only and with host DRAM,
# concurrency 4-64. One `deltaserve replay --json` per (trace, deployment, tiers), results under
# $OUT/<trace>/<deployment>/<tiers>/ (replay.json, replay.csv, the four plots), and a summary
# table in $OUT/summary.csv. Long: hours on 2 cores; the subsets below narrow it.
#
#   bash bench/policy_grid.sh                      # everything
#   TRACES="agentx" MODELS="k3" TIERS="hbm" CONC=8,16,24,32 bash bench/policy_grid.sh
#
# Environment: DELTASERVE (binary, default build/apps/deltaserve), OUT (default
# bench-out/policy), TRACES (agentx claude710 mooncake tools), MODELS (k3 kimi-linear), TIERS
# (hbm hbm,dram), CONC (4,8,16,24,32,48,64), CLAUDE710 (path of the 710-session Claude Code
# tarball, kvcache_tester_claude_code_traces_710.tar.gz; skipped when absent), PROFILE_S (1200).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${DELTASERVE:-build/apps/deltaserve}
OUT=${OUT:-bench-out/policy}
TRACES=${TRACES:-"agentx claude710 mooncake tools"}
MODELS=${MODELS:-"k3 kimi-linear"}
TIERS=${TIERS:-"hbm hbm,dram"}
CONC=${CONC:-4,8,16,24,32,48,64}
PROFILE_S=${PROFILE_S:-1200}
CLAUDE710=${CLAUDE710:-../shared/data/traces/kvcache_tester_claude_code_traces_710.tar.gz}

# label retention eviction [cache-model]
POLICIES=(
  "vllm-interval interval:32768 leaf-lru"
  "vllm-0 junction leaf-lru"
  "sglang-csl semantic consumed-state-lru"
  "marconi semantic flop-per-byte"
  "every-block every-block leaf-lru"
  "prompt-end prompt-end leaf-lru"
  "boundary-aware boundary-aware boundary-aware"
  "boundary-aware:q boundary-aware boundary-aware:queue"
  "vllm-cache - - vllm"
  "sglang-cache - - sglang"
)

trace_spec() {
  case $1 in
    agentx) echo "synthetic:agentx" ;;
    claude710) echo "$CLAUDE710" ;;
    mooncake) echo "bundled:mooncake_fast25_conversation_trace.jsonl.gz" ;;
    tools) echo "synthetic" ;;  # the tool-agent-like synthetic sessions
  esac
}

model_args() {
  case $1 in
    k3) echo "--model kimi-k3 --hardware b300 --gpus 8 --kv-dtype fp8" ;;
    kimi-linear) echo "--model kimi-linear-48b --hardware h200 --gpus 1 --kv-dtype bf16" ;;
  esac
}

mkdir -p "$OUT"
echo "trace,model,tiers,label,cache_model,retention,eviction,concurrency,realized_hit_rate,offline_bound_hit_rate,theoretical_hit_rate,checkpoint_bytes_per_hit_token,ttft_p50_s,ttft_p90_s,output_tok_s_per_gpu,usd_per_m_input_tokens,usd_per_m_output_tokens" >"$OUT/summary.csv"
for trace in $TRACES; do
  spec=$(trace_spec "$trace")
  if [[ $trace == claude710 && ! -e $spec ]]; then
    echo "skip claude710: $spec not found (set CLAUDE710)" >&2
    continue
  fi
  harness=agentx
  [[ $trace == mooncake ]] && harness=default  # open loop: replayed at its timestamps
  for model in $MODELS; do
    for tiers in $TIERS; do
      dir="$OUT/$trace/$model/${tiers/,/+}"
      mkdir -p "$(dirname "$dir")"
      runs=()
      for p in "${POLICIES[@]}"; do
        read -r label retention eviction cache_model <<<"$p"
        cache_model=${cache_model:-deltaserve}
        [[ $cache_model == sglang && $tiers != hbm ]] && continue  # no host tier in the SGLang emulation
        args=(--trace "$spec" $(model_args "$model") --concurrency "$CONC" --tiers "$tiers"
              --harness "$harness" --profile "$PROFILE_S" --cache-warmup 300 --live-output
              --reserve-full-prompt --cache-model "$cache_model" --out "$dir/$label" --json)
        [[ $cache_model == deltaserve ]] && args+=(--retention "$retention" --eviction "$eviction")
        echo "== $trace $model $tiers $label" >&2
        "$BIN" replay "${args[@]}" >"$dir.$label.json.tmp" 2>/dev/null || { echo "failed: $label" >&2; continue; }
        runs+=("$dir.$label.json.tmp")
        python3 - "$dir.$label.json.tmp" "$trace" "$model" "$tiers" "$label" >>"$OUT/summary.csv" <<'PY'
import json, sys
path, trace, model, tiers, label = sys.argv[1:]
for r in json.load(open(path))["runs"]:
    print(",".join(str(x) for x in [trace, model, tiers.replace(",", "+"), label, r["cache_model"], r["retention"],
          r["eviction"], r["concurrency"], r["realized_hit_rate"], r["offline_bound_hit_rate"],
          r["theoretical_hit_rate"], r["checkpoint_bytes_per_hit_token"], r["ttft_p50_s"], r["ttft_p90_s"],
          r["output_tok_s_per_gpu"], r["usd_per_m_input_tokens"], r["usd_per_m_output_tokens"]]))
PY
      done
      rm -f "${runs[@]}"
    done
  done
done
echo "wrote $OUT/summary.csv" >&2
