#!/usr/bin/env bash
# Formats every tracked C++/CUDA file with the project's .clang-format.
#   bash scripts/format.sh           rewrite files in place
#   bash scripts/format.sh --check   list unformatted files and exit 1 if there are any (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-fix}
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
if [ "$mode" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run: bash scripts/format.sh):"
    printf '  %s\n' "${bad[@]}"
    exit 1
  fi
  echo "format: ${#files[@]} files clean"
else
  clang-format -i "${files[@]}"
fi
