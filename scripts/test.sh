#!/usr/bin/env bash
# The test command: set-up, build, every unit/golden/property test, the kernel tests of a portable
# build (-DDS_NATIVE=OFF) on every instruction-set path, then each fuzz target briefly.
# Ends with one summary line "tests: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bash scripts/format.sh --check
bash scripts/check_layers.sh
# CUDA sources: compiled only (CI has nvcc but no GPU; scripts/gpu_test.sh runs the GPU tests on a
# GPU machine). Skipped with a note where nvcc is absent, so the CPU test run never depends on it.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS_CUDA=ON >/dev/null
  cmake --build build-cuda -j"$(nproc)" --target ds_kernels test_kernels_gpu ds_kda_capi test_model_gpu
else
  echo "test.sh: no nvcc here: CUDA build skipped"
fi
# ctest runs nproc test processes, each with nproc OpenMP threads: spinning threads would wait for
# descheduled partners on an oversubscribed machine, so idle threads sleep instead.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
log=build/ctest.log
status=0
ctest --test-dir build --output-on-failure -j"$(nproc)" 2>&1 | tee "$log" || status=$?
bash scripts/test_portable.sh 2>&1 | tee build/portable.log || status=1
bash scripts/fuzz.sh "${DS_FUZZ_SECONDS:-20}"
summary=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
failed=$(sed -E 's/.* ([0-9]+) tests failed.*/\1/' <<<"$summary")
read -r p_passed p_failed < <(sed -nE 's/^portable: ([0-9]+) passed, ([0-9]+) failed/\1 \2/p' build/portable.log)
: "${p_passed:=0}" "${p_failed:=1}"
echo "tests: $((total - failed + p_passed)) passed, $((failed + p_failed)) failed"
exit "$status"
