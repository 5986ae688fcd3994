#!/usr/bin/env bash
# The test command: set-up, build, every unit/golden test, then each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
bash scripts/fuzz.sh "${DS_FUZZ_SECONDS:-20}"
