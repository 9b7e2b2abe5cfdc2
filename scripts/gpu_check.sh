#!/usr/bin/env bash
# The checks that need a CUDA device, in one go (a GPU machine is lent for minutes, not hours):
# builds the library, its CUDA plugin, the `flopsprof` command and the GPU tests against the
# LibTorch of `python3` (pip's torch with CUDA), then runs
#   1. the GPU tests (tests/gpu_test.cpp: CUPTI kernels attributed to modules, CUDA-event timing);
#   2. tests/fcm_models.py with FLOPSPROF_TEST_DEVICE=cuda: the command on the GPU against
#      FlopCounterMode on the GPU, module by module (cuDNN's and the fused attention kernels);
#   3. the command's text report of a ResNet-50 on the GPU (its roofline, the device's peaks);
#   4. bench/gpu_overhead.cpp where Google Benchmark is found (a BERT-base training step: unprofiled,
#      CUPTI, per-module synchronization; its report with the backward on the GPU).
# FLOPSPROF_GPU_CHECKS: the steps to run, of "tests fcm report bench" (default: all).
#   scripts/gpu_check.sh OUTDIR     (logs, JSON and the text report go to OUTDIR: eight files at
#                                   most; the models and the build stay in FLOPSPROF_GPU_WORK)
# FLOPSPROF_DEPS_PREFIX: where fmt, nlohmann_json and GTest are when the machine has none
# (a copy of Debian's packages' files). FLOPSPROF_JOBS: build jobs (default: all CPUs).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1
t0=$(date +%s)
step() { echo "== $(($(date +%s) - t0)) s: $*"; }
nvidia-smi -L || true
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || exit 1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "available", torch.cuda.is_available(), "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)'
work=${FLOPSPROF_GPU_WORK:-/tmp/flopsprof-gpu}
build=$work/build
gen=()
keep_going=(-k)
command -v ninja > /dev/null && gen=(-G Ninja) && keep_going=(-k 0)
step configure
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix;${FLOPSPROF_DEPS_PREFIX:-/usr}" \
  -DFLOPSPROF_BUILD_EXAMPLES=OFF -DFLOPSPROF_WITH_CUDA=ON \
  > "$out/configure.log" 2>&1 || { tail -n 40 "$out/configure.log"; exit 1; }
grep -i "cuda\|torch" "$out/configure.log" | head -n 20
step build
jobs=${FLOPSPROF_JOBS:-$(nproc)}
checks=" ${FLOPSPROF_GPU_CHECKS:-tests fcm report bench} "
targets=(flopsprof_cuda flopsprof_cli flopsprof_gpu_test)
bench=0
if [[ $checks == *" bench "* ]] && grep -q "^FLOPSPROF_WITH_BENCHMARK:BOOL=ON" "$build/CMakeCache.txt"; then
  targets+=(flopsprof_bench_gpu)
  bench=1
fi
if ! cmake --build "$build" -j "$jobs" --target "${targets[@]}" \
     -- "${keep_going[@]}" > "$out/build.log" 2>&1; then
  grep -E "error|Error" -A3 "$out/build.log" | head -n 150
  echo "gpu_check: the build failed ($out/build.log)"
  exit 1
fi
rc=0
if [[ $checks == *" tests "* ]]; then
  step "GPU tests"
  "$build/tests/flopsprof_gpu_test" --gtest_output="json:$out/gpu_test.json" || rc=1
fi
if [[ $checks == *" fcm "* ]]; then
  step "fcm_models on cuda"
  FLOPSPROF_TEST_DEVICE=cuda python3 tests/fcm_models.py "$build/tools/flopsprof" "$work/fcm" || rc=1
fi
if [[ $checks == *" report "* ]]; then
  step "the command's report of a ResNet-50 on cuda"
  python3 -c 'import sys, torch, torchvision
m = torchvision.models.resnet50().eval().cuda()
torch.jit.save(torch.jit.trace(m, torch.randn(1, 3, 64, 64, device="cuda")), sys.argv[1])' \
    "$work/resnet50.pt" || rc=1
  "$build/tools/flopsprof" "$work/resnet50.pt" --input 8x3x224x224 --device cuda --runs 5 \
    --json "$out/resnet50_cuda.json" > "$out/resnet50_cuda.txt" 2>&1 || rc=1
  head -n 60 "$out/resnet50_cuda.txt"
fi
if [ $bench -eq 1 ]; then
  step "bench/gpu_overhead.cpp: a BERT-base training step"
  "$build/bench/flopsprof_bench_gpu" 5 > "$out/bench_gpu.txt" 2>&1 || rc=1
  head -n 40 "$out/bench_gpu.txt"
fi
step "done (exit $rc)"
exit $rc
