#!/usr/bin/env bash
# The HF + fla reference next to deltaserve in one device call, on one checkpoint folder: what is
# installed, a Kimi-Linear-48B-A3B-shaped folder with LAYERS layers of random bf16 weights, then
# `deltaserve logits --device cuda` and `bench_gpu_model --model` on it, then transformers' kimi_linear
# (fla's kernels bound when fla imports) on the same folder, and the prompt's logits compared. Without
# transformers it times fla's KDA kernels alone (hf_reference.py kda) and says so. Usage, from the
# repository root on the GPU machine:
#   BIN=<folder with deltaserve, bench_gpu_model (+ lib/, extra/)> FLA=<folder holding fla/> \
#     [LAYERS=4] [TOTAL_S=280] [STEPS=8] [F32=0] [TRITON_CACHE_IN=<.tgz>] bash bench/gpu_model/run_hf_reference.sh
# extra/ holds shared libraries that only deltaserve needs (the CLI's tokenizer and server); those the
# machine lacks are put into lib/. Triton's cache (fla's compiled and autotuned kernels: the first HF
# forward spends minutes there) is saved to $OUT/triton_cache.tgz every 20 s and restored from
# TRITON_CACHE_IN, so a later call skips the compilation. Results under $OUT: probe.json, make.json,
# ours_bench.log, hf.json, compare.json (the rest goes to stdout).
set -o pipefail
B=${BIN:-.dev/ref/bin}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-out}
WORK=${WORK:-/tmp/hf_ref}
LAYERS=${LAYERS:-4}
STEPS=${STEPS:-8}
END=$((SECONDS + ${TOTAL_S:-280}))
mkdir -p "$OUT" "$WORK"
if [ -f "$B/lib.tar.xz" ] && [ ! -d "$B/lib" ]; then mkdir -p "$B/lib" && tar -xJf "$B/lib.tar.xz" -C "$B/lib"; fi
mkdir -p "$B/lib"
if [ -f "$B/extra.tar.xz" ]; then mkdir -p "$B/extra" && tar -xJf "$B/extra.tar.xz" -C "$B/extra"; fi
if [ -f "$B/bin.tar.xz" ]; then tar -xJf "$B/bin.tar.xz" -C "$B" && rm -f "$B/bin.tar.xz"; fi
source "$HERE/device_env.sh"
# With lib/ on the library path, so that a copied library's own missing dependencies (ICU's data
# library behind libicuuc) show up on the next pass.
for pass in 1 2 3; do
  for l in $(ldd "$B/deltaserve" | awk '/not found/ {print $1}'); do
    [ -f "$B/extra/$l" ] && cp "$B/extra/$l" "$B/lib/"
  done
done
export PYTHONUNBUFFERED=1 TRITON_PRINT_AUTOTUNING=1 TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
mkdir -p "$TRITON_CACHE_DIR"
if [ -n "${TRITON_CACHE_IN:-}" ] && [ -f "$TRITON_CACHE_IN" ]; then tar -xzf "$TRITON_CACHE_IN" -C "$TRITON_CACHE_DIR"; fi
save_cache() { tar -czf "$OUT/.tc.tgz" -C "$TRITON_CACHE_DIR" . 2>/dev/null && mv "$OUT/.tc.tgz" "$OUT/triton_cache.tgz"; }
(while sleep 20; do save_cache; done) &
saver=$!
left() { echo $((END - SECONDS)); }
PY=(python3 "$HERE/hf_reference.py" --out "$OUT" --work "$WORK" --fla "${FLA:-}"
  --config "${CONFIG:-data/profiles/models/kimi-linear-48b/config.json}" --layers "$LAYERS")
# The folder on a RAM disk when it has room (about 3.6 GB per MoE layer plus 1.6 GB).
MODEL=$WORK/model
need_kb=$(((LAYERS * 4 + 4) * 1024 * 1024))
if [ "$(df -k --output=avail /dev/shm 2>/dev/null | tail -1)" -gt "$need_kb" ] 2>/dev/null; then MODEL=/dev/shm/hf_ref_model; fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
timeout 60 "${PY[@]}" probe
echo "probe rc=$? ($SECONDS s)"
has() { python3 -c "import json,sys; sys.exit(0 if json.load(open('$OUT/probe.json')).get('$1') else 1)" 2>/dev/null; }
if ! has kimi_linear; then
  echo "HF reference NOT run: transformers with kimi_linear is not installed on this machine (probe.json)."
  if has fla_ok; then
    timeout "$(left)" "${PY[@]}" kda --prefill 8192,32768 --batch 1,8
    echo "fla kda rc=$?"
  fi
  kill "$saver"; save_cache
  exit 0
fi
timeout 150 "${PY[@]}" make --model "$MODEL"
echo "make rc=$? ($SECONDS s)"
timeout 90 "$B/deltaserve" logits --device cuda --precision bf16 --model "$MODEL" --tokens-file "$WORK/prompt.txt" \
  --out "$WORK/ours_bf16.safetensors" 2>&1 | tail -3
echo "ours logits bf16 rc=$? ($SECONDS s)"
timeout 120 "$B/bench_gpu_model" --model "$MODEL" --batch 1,8 --context 4096 --variants graphs \
  --prefill 8192,32768 --decode-steps "$STEPS" 2>&1 | tee "$OUT/ours_bench.log"
echo "ours bench rc=$? ($SECONDS s)"
budget=$(($(left) - 45))
[ "$budget" -lt 20 ] && budget=20
timeout $((budget + 35)) "${PY[@]}" hf --model "$MODEL" --prefill 8192,32768 --batch 1,8 --context 4096 \
  --budget-s "$budget" --decode-steps "$STEPS" --reps 1 2>&1 | grep -v "^Loading weights"
echo "hf rc=$? ($SECONDS s)"
if [ "${F32:-0}" = 1 ] && [ "$(left)" -gt 30 ]; then
  timeout "$(left)" "$B/deltaserve" logits --device cuda --precision f32 --model "$MODEL" \
    --tokens-file "$WORK/prompt.txt" --out "$WORK/ours_f32.safetensors" 2>&1 | tail -3
  echo "ours logits f32 rc=$? ($SECONDS s)"
fi
timeout 60 "${PY[@]}" compare --ours "$WORK/ours_bf16.safetensors" --ours-f32 "$WORK/ours_f32.safetensors"
echo "compare rc=$? ($SECONDS s)"
kill "$saver"
save_cache
rm -rf /dev/shm/hf_ref_model
