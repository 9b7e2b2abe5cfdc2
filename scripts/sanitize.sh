#!/usr/bin/env bash
# The sanitizer job (run by the README's test command, hence by CI): the whole test suite and the
# package consumer under ASan + UBSan, then the threading tests (live traffic, several threads,
# callbacks parked at stop) under TSan. Builds in build-asan/ and build-tsan/.
#   scripts/sanitize.sh            both
#   scripts/sanitize.sh asan|tsan  one of them
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLOPSPROF_BUILD_EXAMPLES=OFF -DFLOPSPROF_BUILD_BENCH=OFF)
jobs=${FLOPSPROF_JOBS:-2}

if [ "$what" = all ] || [ "$what" = asan ]; then
  cmake -S . -B build-asan "${common[@]}" -DFLOPSPROF_INSTALL=ON \
    -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"
  cmake --build build-asan -j"$jobs"
  # LibTorch keeps process-lifetime allocations (its registries): leak checking is off; every
  # other report, and any undefined behaviour, fails the run.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "gpu|slow"
fi

if [ "$what" = all ] || [ "$what" = tsan ]; then
  cmake -S . -B build-tsan "${common[@]}" -DFLOPSPROF_INSTALL=OFF -DCMAKE_CXX_FLAGS="-fsanitize=thread"
  cmake --build build-tsan -j"$jobs" --target flopsprof_torch_test
  # LibTorch itself is not instrumented: the filter runs the tests whose threads are ours.
  TSAN_OPTIONS=halt_on_error=1:report_signal_unsafe=0 build-tsan/tests/flopsprof_torch_test \
    --gtest_filter='Lifetime.*:Profiler.ForwardsOnTwoThreadsAreAttributed:Profiler.CallingThreadModeIgnoresOtherThreads:Programs.TwoProfilersOnAGanEachSeeTheirOwnModel'
fi
echo "sanitize: $what passed"
