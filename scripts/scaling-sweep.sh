#!/usr/bin/env bash
# The scaling sweep: W1 (spawn-empty), W2 (parallel-for) and W3
# (frame-graph) at 1 -> N-1 workers on a many-core machine, default idle
# policy, against rayon with the same thread count and serial, in one run.
# Prints the machine (CPU model, cores, load before and after) first, so
# every figure can be read against the machine it came from.
#
# Usage: bash scripts/scaling-sweep.sh [OUT_DIR] [WORKER_COUNTS]
#   OUT_DIR        where the JSON lands (default target/jobsys-bench/sweep)
#   WORKER_COUNTS  comma-separated (default 1,2,4,8,... up to cores - 1)
#   JOBSYS_BENCH   a prebuilt jobsys-bench (default: cargo builds it)
set -euo pipefail
# A relative JOBSYS_BENCH is relative to where the script was called from.
if [ -n "${JOBSYS_BENCH:-}" ]; then JOBSYS_BENCH=$(realpath "$JOBSYS_BENCH"); fi
cd "$(dirname "$0")/.."
out=${1:-target/jobsys-bench/sweep}
cores=$(nproc)
if [ -n "${2:-}" ]; then
  workers=$2
else
  workers=1
  w=2
  while [ "$w" -lt "$((cores - 1))" ]; do workers="$workers,$w"; w=$((w * 2)); done
  [ "$cores" -gt 2 ] && workers="$workers,$((cores - 1))"
fi
bench=${JOBSYS_BENCH:-}
if [ -z "$bench" ]; then
  cargo build --release -q -p jobsys-bench
  bench=target/release/jobsys-bench
fi
mkdir -p "$out"
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg); workers: $workers"
for w in spawn-empty parallel-for frame-graph; do
  echo
  echo "== $w"
  "$bench" "$w" --workers "$workers" --policy spin-then-sleep --out "$out"
done
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
