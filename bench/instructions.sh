#!/usr/bin/env bash
# Instruction counts of the profiled loops (callgrind), as ratios over the unprofiled run:
#   bench/instructions.sh [build dir]   -> one line per workload and variant
# Target (issue 9): ours / plain <= 1.28 for both workloads; (issue 29) ours / floor <= 1.03;
# (issue 46) ours on the dispatch capture: mlp <= 1.10 x unprofiled (stretch).
set -euo pipefail
build=${1:-build}
bin="$build/bench/flopsprof_bench_instructions"
count() {
  OMP_NUM_THREADS=1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/dev/null \
    "$bin" "$1" "$2" 2>&1 | awk '/Collected :/ {print $4}'
}
for w in mlp train; do
  plain=$(count "$w" plain)
  for v in machinery floor interceptor unboxed pytorch ours_rf ours; do
    n=$(count "$w" "$v")
    awk -v w="$w" -v v="$v" -v n="$n" -v p="$plain" \
      'BEGIN { printf "%-5s %-9s %12d instructions  %.3f x unprofiled (%d)\n", w, v, n, n / p, p }'
  done
done
