#!/usr/bin/env bash
# The C API's cost, before/after in one run (docs/c-api.md, "Cost"):
#
# 1. Handle-table contention: crates/jobsys-capi/bench/capi_bench.c
#    `threads 8 1000000 W`: 8 pthreads at once, each scheduling and
#    completing 125 000 empty jobs one by one through jobsys_schedule +
#    jobsys_complete, on one system with W workers (W = 2, then 0). "Before"
#    is the single-lock table (JOBSYS_CAPI_HANDLE_SHARDS=1), "after" the
#    sharded one (32 shards, the default), same binary; the two alternate
#    within each round (order flipped every round). Figure: median over the
#    rounds of wall-clock ns per job.
# 2. W1 "single" (schedule + complete of an empty job, 65 000 times, 0
#    workers) through the C API (`capi_bench w1`) against the same kernel
#    in Rust (crates/jobsys-w1 `--case single`, built with jobsys's `trace`
#    feature as the C API's library is), alternating, 5 samples each per
#    round. Figure: median of all samples, ns per job.
# 3. PERF=1 (default 1 when `perf` works): one extra run of each table under
#    `perf stat`: futex syscalls and context switches per job and CPU time
#    per job, less sensitive to other load than wall-clock time.
# 4. CALLGRIND=1 (default 1 when valgrind is installed): instructions per
#    job of both W1 kernels, counted by callgrind (independent of load;
#    the difference of a 5-sample and a 1-sample run over 4 x 65 000 jobs,
#    as scripts/w1-instructions.sh counts the Rust W1).
#
# Usage: bash scripts/capi-bench.sh            (ROUNDS=7 THREADS=8 JOBS=1000000 WORKERS="2 0")
# The machine's load (/proc/loadavg) is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-7}
threads=${THREADS:-8}
jobs=${JOBS:-1000000}
workers=${WORKERS:-2 0}
target=${CARGO_TARGET_DIR:-$PWD/target}
out=$(mktemp -d /tmp/capi-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

cargo build -q --release -p jobsys-capi
CARGO_TARGET_DIR=$target/capi-bench-w1 cargo build -q --release -p jobsys-w1 --features trace
rust_w1=$target/capi-bench-w1/release/jobsys-w1
bin=$out/capi_bench
cc -std=c11 -O2 -g -Wall -Wextra -Werror -I crates/jobsys-capi/include \
  crates/jobsys-capi/bench/capi_bench.c "$target/release/libjobsys_capi.a" \
  -lpthread -ldl -lm -o "$bin"

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "load before: $(cat /proc/loadavg)"
for r in $(seq "$rounds"); do
  for w in $workers; do
    if [ $((r % 2)) -eq 1 ]; then order="1 32"; else order="32 1"; fi
    for s in $order; do
      JOBSYS_CAPI_HANDLE_SHARDS=$s "$bin" threads "$threads" "$jobs" "$w" >>"$out/threads"
    done
  done
  if [ $((r % 2)) -eq 1 ]; then
    "$bin" w1 5 >>"$out/w1-c"
    "$rust_w1" --case single --workers 0 --warmup 1 --samples 5 >>"$out/w1-rust"
  else
    "$rust_w1" --case single --workers 0 --warmup 1 --samples 5 >>"$out/w1-rust"
    "$bin" w1 5 >>"$out/w1-c"
  fi
done
echo "load after: $(cat /proc/loadavg)"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }

echo
echo "handle table: $threads threads x $((jobs / threads)) jobs at once, wall ns/job, median of $rounds rounds (range)"
for w in $workers; do
  for s in 1 32; do
    vals=$(grep " shards=$s threads=$threads workers=$w " "$out/threads" | sed 's/.*ns_per_job=//')
    printf '  workers %s, %2s shard(s): %s  (%s)\n' "$w" "$s" "$(median <<<"$vals")" "$(minmax <<<"$vals")"
  done
done

echo
echo "W1 single (65 000 x schedule + complete, 0 workers), ns/job, median of $((rounds * 5)) samples (range)"
c=$(sed 's/.*ns_per_job=//' "$out/w1-c" | tr ',' '\n')
rs=$(sed 's/.*"samples":\[\([^]]*\)\].*/\1/' "$out/w1-rust" | tr ',' '\n')
printf '  C API (jobsys_schedule/jobsys_complete): %s  (%s)\n' "$(median <<<"$c")" "$(minmax <<<"$c")"
printf '  Rust (js.schedule/js.try_complete):      %s  (%s)\n' "$(median <<<"$rs")" "$(minmax <<<"$rs")"

if [ "${PERF:-1}" = 1 ] && perf stat -e syscalls:sys_enter_futex true >/dev/null 2>&1; then
  echo
  echo "perf stat, one run each: futex syscalls/job, context switches/job, CPU ns/job (all threads)"
  for w in $workers; do
    for s in 1 32; do
      JOBSYS_CAPI_HANDLE_SHARDS=$s perf stat -x, -e syscalls:sys_enter_futex,context-switches,task-clock \
        -o "$out/perf" "$bin" threads "$threads" "$jobs" "$w" >/dev/null
      awk -F, -v j="$jobs" -v w="$w" -v s="$s" '
        /sys_enter_futex/ { f = $1 } /context-switches/ { c = $1 } /task-clock/ { t = $1 }
        END { printf "  workers %s, %2s shard(s): futex %.3f  cs %.3f  cpu %.0f\n", w, s, f / j, c / j, t * 1e6 / j }' "$out/perf"
    done
  done
fi

if [ "${CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null; then
  echo
  echo "callgrind, instructions per job (W1 single, 0 workers)"
  count() { # count TOGGLE SAMPLES CMD...: instructions in TOGGLE
    local toggle=$1 n=$2
    shift 2
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" --toggle-collect="$toggle" \
      "$@" "$n" >/dev/null 2>&1
    sed -n 's/^summary: \([0-9]*\)/\1/p' "$out/cg"
  }
  c5=$(count w1_iteration 5 "$bin" w1)
  c1=$(count w1_iteration 1 "$bin" w1)
  r5=$(count '*w1_kernels::iteration*' 5 "$rust_w1" --case single --workers 0 --warmup 1 --samples)
  r1=$(count '*w1_kernels::iteration*' 1 "$rust_w1" --case single --workers 0 --warmup 1 --samples)
  awk -v a="$c5" -v b="$c1" 'BEGIN { printf "  C API: %.1f\n", (a - b) / 4 / 65000 }'
  awk -v a="$r5" -v b="$r1" 'BEGIN { printf "  Rust:  %.1f\n", (a - b) / 4 / 65000 }'
fi
