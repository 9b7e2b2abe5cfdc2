#!/usr/bin/env bash
# Builds this checkout against LibTorch 2.6 in the Debian 13 root (scripts/trixie_root.sh) and runs ctest there.
#   scripts/test_libtorch2.sh [ctest args...]   e.g. -R Attention, or -E gpu
# The source tree is bind-mounted read-only at /src inside the root; the build folder lives in the root
# (/build/<checkout>), kept between runs so a second run only rebuilds what changed.
# The host's CUDA toolkit (FLOPSPROF_CUDA_HOME, default /usr/local/cuda; a plain folder of NVIDIA's, not a
# Debian package) is bind-mounted at /usr/local/cuda inside when present, so that the GPU plugin and its
# fake-CUPTI tests build against LibTorch 2.6 too; without it they are skipped at configure time (said so).
# Environment: FLOPSPROF_TRIXIE_ROOT (see trixie_root.sh), JOBS (default 2), BUILD_TYPE (default Release).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-2}
build_type=${BUILD_TYPE:-Release}
# One build folder per checkout, so two clones on one machine do not share a CMake cache.
key=$(basename "$here")-$(printf '%s' "$here" | cksum | cut -d' ' -f1)
# The root needs root (mmdebstrap, mount, chroot), as scripts/install_deps.sh needs it for apt-get.
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
start=$(date +%s)
root=$($sudo "$here/scripts/trixie_root.sh")
created=$(($(date +%s) - start))

inner=$(cat <<'EOF'
set -eu
build=$1; jobs=$2; build_type=$3; shift 3
torch_version=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "?")
echo "test_libtorch2: $(g++ --version | head -n1), $(cmake --version | head -n1), torch $torch_version"
mkdir -p "$build"
t0=$(date +%s)
cuda=OFF
[ -x /usr/local/cuda/bin/nvcc ] && cuda=ON
# Each library file compiled alone here (FLOPSPROF_UNITY_BUILD=OFF): the other jobs build unity
# translation units, which would hide a file that compiles only after another's includes.
cmake -S /src -B "$build" -DCMAKE_BUILD_TYPE="$build_type" -DFLOPSPROF_WITH_CUDA=$cuda \
  -DFLOPSPROF_UNITY_BUILD=OFF > "$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
grep -E "flopsprof|CUDA" "$build.configure.log" || true
cmake --build "$build" -j "$jobs" 2>&1 | grep -E "warning|error|Error|^/src/[^ ]*: In " || true
cmake --build "$build" -j "$jobs" > /dev/null 2>&1 || { cmake --build "$build" -j 1 2>&1 | tail -n 60; exit 1; }
t1=$(date +%s)
set +e
(cd "$build" && ctest --output-on-failure -j "$jobs" --output-junit "$build.junit.xml" "$@")
rc=$?
set -e
t2=$(date +%s)
# Every skipped test with the reason it printed (GTEST_SKIP's message), from ctest's JUnit file.
python3 - "$build.junit.xml" <<'PY' || true
import re, sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.get("status") != "skipped" and case.find("skipped") is None:
        continue
    out = case.findtext("system-out") or ""
    m = re.search(r": Skipped\n(.*?)\n\[  SKIPPED \]", out, re.S)
    print("  skipped:", case.get("name"), "--", (m.group(1).strip() if m else "no reason printed").replace("\n", " "))
PY
echo "test_libtorch2: build (${build_type}, -j${jobs}) $((t1 - t0)) s, ctest $((t2 - t1)) s"
exit $rc
EOF
)
binds=(--bind "$here:/src")
# shared/ beside the checkout (CI's layout) holds the pinned Holistic Trace Analysis the multi-rank
# trace test runs: /src/../shared inside, as outside.
[ -d "$here/../shared" ] && binds+=(--bind "$(cd "$here/../shared" && pwd):/shared")
cuda_home=${FLOPSPROF_CUDA_HOME:-/usr/local/cuda}
if [ -d "$cuda_home" ]; then
  binds+=(--bind "$(readlink -f "$cuda_home"):/usr/local/cuda")
else
  echo "test_libtorch2: no CUDA toolkit at $cuda_home: the GPU plugin is not built in the root"
fi
set +e
$sudo "$here/scripts/trixie_root.sh" "${binds[@]}" \
  bash -c "$inner" _ "/build/$key" "$jobs" "$build_type" "$@"
rc=$?
set -e
echo "test_libtorch2: root ${root} (ready in ${created} s); LibTorch 2.6 suite $([ $rc -eq 0 ] && echo PASSED || echo FAILED)"
exit $rc
