#!/usr/bin/env bash
# The fuzz job (run by .ci/run): every reader of untrusted input under libFuzzer with ASan + UBSan,
# for a bounded time each, from its seed corpus (tests/fuzz/corpus/<target>: the bad inputs of
# issue 49 and valid files). Builds in build-fuzz/ with clang. Fails on any crash, sanitizer report,
# leak of the target's own, or input slower than 10 s.
#   scripts/fuzz.sh                 each target for FUZZ_SECONDS (default 45)
#   scripts/fuzz.sh TARGET [ARGS]   one target (profile_json, gate_rule, input_spec, inputs_file),
#                                   extra libFuzzer arguments after it
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-45}
jobs=${FLOPSPROF_JOBS:-2}
command -v clang++ > /dev/null && [ -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] || {
  echo "fuzz: installing clang and its runtime (libclang-rt-14-dev)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-14-dev
}
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1"
t0=$(date +%s)
mkdir -p build-fuzz
log=build-fuzz/configure.log
CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG" "-DCMAKE_CXX_FLAGS=$flags" \
  -DFLOPSPROF_BUILD_FUZZERS=ON -DFLOPSPROF_BUILD_TESTS=OFF -DFLOPSPROF_BUILD_EXAMPLES=OFF \
  -DFLOPSPROF_BUILD_BENCH=OFF -DFLOPSPROF_BUILD_TOOLS=OFF -DFLOPSPROF_INSTALL=OFF \
  -DFLOPSPROF_WITH_CUDA=OFF -DFLOPSPROF_PRECOMPILE_TORCH=OFF > "$log" 2>&1 ||
  { cat "$log"; exit 1; }
cmake --build build-fuzz -j"$jobs" --target flopsprof_fuzzers
t1=$(date +%s)
targets=(profile_json gate_rule input_spec inputs_file)
extra=()
if [ $# -gt 0 ]; then
  targets=("$1")
  shift
  extra=("$@")
fi
status=0
for t in "${targets[@]}"; do
  # A scratch copy of the seeds: what the run finds stays out of the checkout.
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$t/." "$work/"
  echo "fuzz: $t for ${seconds} s ($(ls "$work" | wc -l) seeds)"
  # LibTorch keeps process-lifetime allocations: leak checking is off for the targets that load it.
  leaks=1
  [ "$t" = inputs_file ] || [ "$t" = input_spec ] && leaks=0
  if ASAN_OPTIONS=detect_leaks=$leaks:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     "build-fuzz/tests/fuzz/flopsprof_fuzz_$t" -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 -artifact_prefix="$work/" \
     "${extra[@]+"${extra[@]}"}" "$work" > "$work.log" 2>&1; then
    grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done)" "$work.log" | tr '\n' ' '
    echo
  else
    status=1
    tail -n 60 "$work.log"
    echo "fuzz: $t FAILED; the input that failed is in $work (crash-*, leak-*, timeout-*)"
  fi
done
echo "fuzz: build $((t1 - t0)) s, fuzzing $(($(date +%s) - t1)) s; $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
