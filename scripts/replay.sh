#!/usr/bin/env bash
# The main job: set-up, build, then `deltaserve replay` on its embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
exec ./build/apps/deltaserve replay "$@"
