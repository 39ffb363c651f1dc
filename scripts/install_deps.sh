#!/usr/bin/env bash
# Installs the Debian packages tapegrad needs that are not installed yet (root, Debian bookworm).
set -euo pipefail

packages=(
  cmake g++ make ccache pkg-config
  libxtensor-dev libxtensor-blas-dev libopenblas-dev libopenblas0-pthread libdnnl-dev
  libfmt-dev catch2 libcli11-dev nlohmann-json3-dev libarchive-dev libcurl4-openssl-dev
  python3 chromium
  libopenmpi-dev openmpi-bin iproute2
  clang libclang-rt-14-dev jq
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tapegrad: installing missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
