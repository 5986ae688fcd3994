#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for N seconds (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDS_FUZZ=ON -DDS_NATIVE=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target ds_fuzzers
shopt -s nullglob
for f in build-fuzz/tests/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  corpus="tests/fuzz/corpus/${name#fuzz_}"
  mkdir -p "build-fuzz/corpus/$name"
  echo "fuzz: $name for ${secs}s"
  "$f" -max_total_time="$secs" -print_final_stats=0 "build-fuzz/corpus/$name" \
    $( [ -d "$corpus" ] && echo "$corpus" ) 2>"build-fuzz/$name.log" \
    || { tail -50 "build-fuzz/$name.log"; echo "fuzz: $name FAILED"; exit 1; }
  grep -E "Done [0-9]+ runs" "build-fuzz/$name.log" || true
done
