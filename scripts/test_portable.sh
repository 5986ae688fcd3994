#!/usr/bin/env bash
# Portable build (no -march=native) into build-portable/: builds the kernel tests only and runs them
# once per instruction-set path this CPU has (DS_CPU_ISA=scalar, avx2, avx512), so the run-time
# dispatch and every path's bodies are tested in the binary that ships without -march=native.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-portable -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS_NATIVE=OFF "$@" >/dev/null
cmake --build build-portable -j"$(nproc)" --target test_kernels
bin=build-portable/tests/kernels/test_kernels
status=0 passed=0 failed=0
for isa in scalar avx2 avx512; do
  out=$(DS_CPU_ISA=$isa "$bin" --gtest_brief=1 2>&1) || { echo "$out" | tail -40; status=1; }
  echo "portable kernels [$isa]: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' <<<"$out" | tr '\n' ' ')"
  p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\./\1/p' <<<"$out")
  f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below:/\1/p' <<<"$out")
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
done
echo "portable: $passed passed, $failed failed"
exit "$status"
