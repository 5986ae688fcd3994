#!/usr/bin/env bash
# KDA decode on a GPU machine in one go: the GPU decode tests (every kernel form), the decode
# benchmark (the forms side by side with fla and device-to-device copies, batch 1-256, both gates),
# then memcheck of the decode forms. Binaries are built elsewhere (build-cuda, docs/perf.md) and
# brought in one folder:
#   D=<folder with test_kernels_gpu, libds_kda_capi.so, bench_kda.py, fla_src/fla, lib/> \
#     bash bench/kda_gpu/decode_device.sh          # from the repository root; logs under $OUT
# (*.tar.xz in the folder are unpacked first.)
set -o pipefail
D=${D:-.dev/cudak}
OUT=${OUT:-out}
mkdir -p "$OUT"
for t in "$D"/*.tar.xz; do [ -f "$t" ] && tar -xJf "$t" -C "$D"; done
# shared libraries brought along only where the machine lacks them
for l in "$D"/lib/*.so*; do ldconfig -p | grep -q "[[:space:]]$(basename "$l") " && rm -f "$l"; done
export LD_LIBRARY_PATH=$PWD/$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if ldd "$D/test_kernels_gpu" | grep -q "libcublasLt.so.13 => not found"; then
  d=$(dirname "$(find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
fi
export DS_TEST_DATA_DIR=$PWD/tests PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
FORMS=${FORMS:-rows,cols,cols-smem4,cols-smem5,cols-pf,cols-smem5-pf,cols-hf,cols-smem5-pf-hf,cols-hf-pdl,cols-hf-pdl+early}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
timeout "${TESTS_S:-60}" "$D/test_kernels_gpu" --gtest_color=no --gtest_filter='KdaCuda.Decode*' >"$OUT/tests.log" 2>&1
echo "tests rc=$?"
grep -E "kda_decode|FAILED|PASSED|SKIPPED|Failure" "$OUT/tests.log" | cut -c1-140
timeout "${BENCH_S:-150}" python3 "$D/bench_kda.py" --lib "$D/libds_kda_capi.so" --fla "$D/fla_src" --parts decode \
  --gates safe,softplus --decode-forms "$FORMS" --decode-batches "${BATCHES:-1,8,32,64,128,256}" \
  --decode-rounds 2 --copy-sizes 4096,1024 --out "$OUT/decode.json" 2>&1 | tee "$OUT/bench.log" | grep -v "^  \["
echo "bench rc=$?"
# largest difference of each form from the first, over every batch and gate (y, states, conv windows)
grep "^  \[" "$OUT/bench.log" | awk '{f = $1; if ($5 + 0 > y[f]) y[f] = $5 + 0; if ($7 + 0 > s[f]) s[f] = $7 + 0;
  if ($11 + 0 > c[f]) c[f] = $11 + 0; if ($5 !~ /^[0-9]/ || $7 !~ /^[0-9]/ || $11 !~ /^[0-9]/) bad[f]++; n[f]++}
  END {for (f in n) printf "%s: %d cases, max y %.2e, states %.2e, conv %.1e, not finite %d\n", f, n[f], y[f], s[f], c[f], bad[f]}'
timeout "${MEMCHECK_S:-40}" compute-sanitizer --tool memcheck "$D/test_kernels_gpu" --gtest_color=no \
  --gtest_filter='KdaCuda.DecodeFormsMatchCpu' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log"
