#!/usr/bin/env bash
# Installs flopsprof's build dependencies from Debian's packages (skips apt-get when all present).
#   scripts/install_deps.sh            what building, the examples and the tests need
#   scripts/install_deps.sh --browser  also the browser tests' set-up: Debian's chromium and
#                                      playwright-core from npm (tests/browser, package-lock.json),
#                                      and Debian's Python packages that Holistic Trace Analysis needs
#                                      (the multi-rank trace test runs the pinned copy in
#                                      ../shared/tools/hta with /usr/bin/python3)
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake g++ make libtorch-dev libopenblas0-openmp libfmt-dev nlohmann-json3-dev
          libgtest-dev libbenchmark-dev libgloo-dev)
browser=0
if [ "${1:-}" = "--browser" ]; then
  browser=1
  packages+=(chromium nodejs npm
             python3-pandas python3-numpy python3-plotly python3-ijson python3-yaml python3-psutil
             python3-networkx python3-pydot)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node and npm may come from elsewhere than Debian: present commands are enough.
if [ $browser = 1 ]; then
  keep=()
  for p in "${missing[@]}"; do
    case "$p" in
      nodejs) command -v node > /dev/null || keep+=("$p") ;;
      npm) command -v npm > /dev/null || keep+=("$p") ;;
      *) keep+=("$p") ;;
    esac
  done
  missing=("${keep[@]+"${keep[@]}"}")
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
else
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install_deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if [ $browser = 1 ] && [ ! -d tests/browser/node_modules/playwright-core ]; then
  echo "install_deps: npm ci in tests/browser (playwright-core; the browser is Debian's chromium)"
  (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
