#!/usr/bin/env bash
# Installs flopsprof's build dependencies from Debian's packages (skips apt-get when all present).
set -euo pipefail
packages=(cmake g++ make libtorch-dev libopenblas0-openmp libfmt-dev nlohmann-json3-dev
          libgtest-dev libbenchmark-dev libgloo-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all dependencies present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install_deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
