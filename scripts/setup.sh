#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the fuzz targets need. Idempotent.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libopenblas-openmp-dev libicu-dev zlib1g-dev   # zlib: .tar.gz / .gz traces
  libgtest-dev libgmock-dev libbenchmark-dev
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
