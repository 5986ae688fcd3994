#!/usr/bin/env bash
# Layering check (CI): a library under src/<lib>/ may include only its own headers and those of the
# libraries it declares in `ds_library(<lib> DEPS ...)` (src/<lib>/CMakeLists.txt), directly or
# through their own declared dependencies. Prints every violation as file:line and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A deps
for cm in src/*/CMakeLists.txt; do
  lib=$(basename "$(dirname "$cm")")
  # ds_core is declared with add_library: it depends on no project library.
  d=$(tr '\n' ' ' <"$cm" | grep -oE 'ds_library\([a-z_]+ DEPS[^)]*\)' | grep -oE 'ds_[a-z_]+' | tail -n +1 | sed 's/^ds_//' | tr '\n' ' ' || true)
  # drop the library's own name (first token of ds_library(<name> ...) is not prefixed, so nothing to drop)
  deps[$lib]="$d"
done
closure() {  # transitive dependencies of $1
  local todo=("$1") seen=" " x y
  while [ ${#todo[@]} -gt 0 ]; do
    x=${todo[0]}; todo=("${todo[@]:1}")
    for y in ${deps[$x]:-}; do
      case "$seen" in *" $y "*) ;; *) seen="$seen$y "; todo+=("$y");; esac
    done
  done
  echo "$seen"
}
libs=" $(ls -d src/*/ | xargs -n1 basename | tr '\n' ' ') "
status=0
for dir in src/*/; do
  lib=$(basename "$dir")
  allowed=" $lib $(closure "$lib") "
  while IFS=: read -r file line inc; do
    target=${inc%%/*}
    case "$libs" in *" $target "*) ;; *) continue;; esac   # not a project library (system header)
    case "$allowed" in *" $target "*) ;; *)
      echo "$file:$line: src/$lib includes \"$inc\" but ds_$lib does not depend on ds_$target"
      status=1;;
    esac
  done < <(grep -rnoE '^#include "[^"]+"' "$dir" --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' \
             | sed -E 's/^([^:]+):([0-9]+):#include "([^"]+)"/\1:\2:\3/')
done
[ $status -eq 0 ] && echo "layers: every include follows the declared dependencies"
exit $status
