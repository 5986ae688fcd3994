#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the fuzz targets need. Idempotent.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libopenblas-openmp-dev libicu-dev zlib1g-dev   # zlib: .tar.gz / .gz traces
  libcpp-httplib-dev         # HTTP server (deltaserve serve) and client (replay --endpoint)
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev   # libFuzzer + sanitizers for tests/fuzz
  clang-format               # scripts/format.sh --check (CI)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node.js and the test-only npm packages pinned in tests/node/package-lock.json: the reference
# tiktoken encoder (tokenizer agreement tests) and the OpenAI client (server tests).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing nodejs npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
node_dir="$(dirname "$0")/../tests/node"
if ! npm ls --prefix "$node_dir" >/dev/null 2>&1; then
  echo "setup: npm ci in tests/node"
  npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error
fi
