#!/usr/bin/env bash
# The full policy grid of docs/policy.md: every retention / eviction anchor, the emulated vLLM and
# SGLang caches and boundary-aware, on four traces, two deployments, GPU-only and with host DRAM,
# concurrency 4-64.
#
# Resumable and safe to run twice at once: every cell (trace, model, tiers, policy, concurrency,
# seed) is one JSON file, $OUT/cells/<trace>/<model>/<tiers>/<policy>/c<concurrency>.json (seed 1)
# or c<concurrency>.s<seed>.json ({"trace", "model", "tiers", "label", "seed", "commit",
# "command", "wall_s", "run": <the replay --json run>}; c0 = the open-loop Mooncake run; commit =
# the checkout's HEAD, "+dirty" when its sources have uncommitted changes), written atomically; cells
# already there are skipped. A seed s sets `replay --seed s` (session order, lane starts, fake
# tokens) and, on the two synthetic traces, the trace generator's seed too (seed 1 = the preset's
# trace). One `deltaserve replay` per (trace, model, tiers, policy, seed) runs that group's missing
# concurrencies (the trace is parsed once); a group another instance is running (lock directory
# .lock[.s<seed>] holding its pid) is skipped. A failed group leaves <policy>[.s<seed>].failed with
# its error and the rest goes on.
# At the end: $OUT/summary.csv over every cell present (bench/policy_tables.py --grid $OUT prints
# the docs/policy.md tables).
#
#   bash bench/policy_grid.sh                      # everything
#   TRACES="agentx" MODELS="k3" TIERS="hbm" CONC=8,16,24,32 bash bench/policy_grid.sh
#   TRACES="agentx tools" TIERS=hbm CONC=8,16,24,32 SEEDS=2,3 bash bench/policy_grid.sh  # repeats
#   DRY=1 bash bench/policy_grid.sh                # list the cells still to run
#
# Environment: DELTASERVE (binary, default build/apps/deltaserve), OUT (default
# bench-out/policy), TRACES (agentx claude710 mooncake tools), MODELS (k3 kimi-linear), TIERS
# (hbm hbm,dram), CONC (4,8,16,24,32,64), SEEDS (1; comma-separated), POLICIES (labels below, default all), THREADS
# (replay --threads, default 1), CLAUDE710 (path of the 710-session Claude Code tarball,
# kvcache_tester_claude_code_traces_710.tar.gz), PROFILE_S (1200), DRY (1 = only list).
#
# Cost per run (one concurrency point, one policy, --threads 1, idle 2-core box): GPU-only 1-3 s
# (+1.0-1.3 s per process to parse the 710-session tarball, 1.2 GB resident); with host DRAM 3-17 s
# (measured before a refused admission stopped walking its prompt twice: ~31 % less now);
# Mooncake (one open-loop run) 0.3 s. docs/policy.md has the table.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${DELTASERVE:-build/apps/deltaserve}
OUT=${OUT:-bench-out/policy}
TRACES=${TRACES:-"agentx claude710 mooncake tools"}
MODELS=${MODELS:-"k3 kimi-linear"}
TIERS=${TIERS:-"hbm hbm,dram"}
CONC=${CONC:-4,8,16,24,32,64}
SEEDS=${SEEDS:-1}
THREADS=${THREADS:-1}
PROFILE_S=${PROFILE_S:-1200}
DRY=${DRY:-0}
if [[ -z ${CLAUDE710:-} ]]; then
  for c in ../shared/data/traces ../../shared/data/traces; do
    CLAUDE710=$c/kvcache_tester_claude_code_traces_710.tar.gz
    [[ -e $CLAUDE710 ]] && break
  done
fi

# label retention eviction [cache-model]
ALL_POLICIES=(
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
POLICIES=${POLICIES:-$(printf '%s\n' "${ALL_POLICIES[@]}" | cut -d' ' -f1 | tr '\n' ' ')}

die() { echo "policy_grid: $*" >&2; exit 1; }
[[ -x $BIN ]] || die "deltaserve binary '$BIN' not found (build it or set DELTASERVE)"

# trace_spec TRACE SEED: the --trace argument (the synthetic generators take the seed; seed 1 is
# their default, so the seed-1 spec is the preset's)
trace_spec() {
  local sfx=""
  (($2 != 1)) && sfx="seed=$2"
  case $1 in
    agentx) echo "synthetic:agentx${sfx:+,$sfx}" ;;
    claude710) echo "$CLAUDE710" ;;
    mooncake) echo "bundled:mooncake_fast25_conversation_trace.jsonl.gz" ;;
    tools) echo "synthetic${sfx:+:$sfx}" ;;  # the tool-agent-like synthetic sessions
    *) die "unknown trace '$1' in TRACES (agentx claude710 mooncake tools)" ;;
  esac
}

model_args() {
  case $1 in
    k3) echo "--model kimi-k3 --hardware b300 --gpus 8 --kv-dtype fp8" ;;
    kimi-linear) echo "--model kimi-linear-48b --hardware h200 --gpus 1 --kv-dtype bf16" ;;
    *) die "unknown model '$1' in MODELS (k3 kimi-linear)" ;;
  esac
}

for t in $TIERS; do [[ $t == hbm || $t == hbm,dram ]] || die "unknown tiers '$t' in TIERS (hbm hbm,dram)"; done
[[ $CONC =~ ^[0-9]+(,[0-9]+)*$ ]] || die "CONC '$CONC' is not a comma-separated list of lane counts"
[[ $SEEDS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "SEEDS '$SEEDS' is not a comma-separated list of seeds"
# the last commit that changed what the binary is built from (src, apps, data, the CMake files);
# "+dirty" when those have uncommitted changes
COMMIT=$(git log -1 --format=%h --abbrev=7 -- src apps data cmake CMakeLists.txt 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain --untracked-files=no -- src apps data cmake CMakeLists.txt 2>/dev/null) ]] &&
  COMMIT+="+dirty"
for l in $POLICIES; do
  printf '%s\n' "${ALL_POLICIES[@]}" | cut -d' ' -f1 | grep -qxF -- "$l" || die "unknown policy '$l' in POLICIES"
done

# Takes the group's lock (a directory holding the owner's pid; a dead owner's lock is taken over).
lock() {
  local d=$1
  if mkdir "$d" 2>/dev/null; then echo $$ >"$d/pid"; return 0; fi
  local pid; pid=$(cat "$d/pid" 2>/dev/null || true)
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then return 1; fi
  echo $$ >"$d/pid"
}

n_run=0 n_skip=0 n_fail=0
IFS=, read -ra seeds <<<"$SEEDS"
for trace in $TRACES; do
  if [[ $trace == claude710 && ! -e $CLAUDE710 ]]; then
    echo "policy_grid: skip claude710: '$CLAUDE710' not found (set CLAUDE710 to the tarball)" >&2
    continue
  fi
  open_loop=0
  [[ $trace == mooncake ]] && open_loop=1  # replayed at its timestamps: no lanes, one run
  for model in $MODELS; do
    for tiers in $TIERS; do
      for label in $POLICIES; do
        for seed in "${seeds[@]}"; do
          spec=$(trace_spec "$trace" "$seed")
          p=$(printf '%s\n' "${ALL_POLICIES[@]}" | awk -v l="$label" '$1 == l')
          read -r _ retention eviction cache_model <<<"$p"
          cache_model=${cache_model:-deltaserve}
          [[ $cache_model == sglang && $tiers != hbm ]] && continue  # no host tier in the SGLang emulation
          dir="$OUT/cells/$trace/$model/${tiers/,/+}/$label"
          sfx=""
          ((seed != 1)) && sfx=".s$seed"
          if ((open_loop)); then todo=(0); else IFS=, read -ra todo <<<"$CONC"; fi
          missing=()
          for c in "${todo[@]}"; do [[ -e $dir/c$c$sfx.json ]] || missing+=("$c"); done
          if ((${#missing[@]} == 0)); then n_skip=$((n_skip + ${#todo[@]})); continue; fi
          args=(--trace "$spec" $(model_args "$model") --tiers "$tiers" --live-output --reserve-full-prompt
                --cache-model "$cache_model" --threads "$THREADS" --seed "$seed" --out "$dir/out$sfx" --json)
          if ((open_loop)); then
            args+=(--harness default)
          else
            args+=(--harness agentx --profile "$PROFILE_S" --cache-warmup 300
                   --concurrency "$(IFS=,; echo "${missing[*]}")")
          fi
          [[ $cache_model == deltaserve ]] && args+=(--retention "$retention" --eviction "$eviction")
          if ((DRY)); then echo "todo $trace $model $tiers $label seed=$seed c=${missing[*]}"; continue; fi
          mkdir -p "$dir"
          lock "$dir/.lock$sfx" || { echo "policy_grid: $dir seed $seed is being run by another instance" >&2; continue; }
          echo "== $trace $model $tiers $label seed=$seed c=${missing[*]}" >&2
          t0=$(date +%s.%N)
          if ! nice "$BIN" replay "${args[@]}" >"$dir/run$sfx.json.tmp" 2>"$dir/run$sfx.err"; then
            { echo "$BIN replay ${args[*]}"; tail -5 "$dir/run$sfx.err"; } >"$dir$sfx.failed"
            echo "policy_grid: FAILED $trace $model $tiers $label seed $seed: $(tail -1 "$dir/run$sfx.err")" >&2
            n_fail=$((n_fail + 1))
            rm -rf "$dir/.lock$sfx"
            continue
          fi
          wall=$(echo "$(date +%s.%N) - $t0" | bc)
          rm -f "$dir$sfx.failed"
          python3 - "$dir" "$trace" "$model" "$tiers" "$label" "$seed" "$COMMIT" "$wall" "$BIN replay ${args[*]}" <<'PY'
import json, os, sys
d, trace, model, tiers, label, seed, commit, wall, cmd = sys.argv[1:]
sfx = "" if seed == "1" else f".s{seed}"
runs = json.load(open(os.path.join(d, f"run{sfx}.json.tmp")))["runs"]
for r in runs:
    cell = {"trace": trace, "model": model, "tiers": tiers, "label": label, "seed": int(seed),
            "commit": commit, "command": cmd, "wall_s": float(wall) / len(runs),
            "group_wall_s": float(wall), "run": r}
    path = os.path.join(d, f"c{r['concurrency']}{sfx}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(cell, f, indent=1)
    os.replace(path + ".tmp", path)
PY
          rm -f "$dir/run$sfx.json.tmp"
          rm -rf "$dir/.lock$sfx"
          n_run=$((n_run + ${#missing[@]}))
        done
      done
    done
  done
done
((DRY)) && exit 0
python3 bench/policy_tables.py --grid "$OUT" --csv >"$OUT/summary.csv"
echo "policy_grid: $n_run cells run, $n_skip already done, $n_fail groups failed; wrote $OUT/summary.csv" >&2
