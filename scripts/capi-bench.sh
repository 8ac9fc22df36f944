#!/usr/bin/env bash
# The C API's cost, before/after in one run (docs/c-api.md, "Cost"):
#
# 1. Threads at once: crates/jobsys-capi/bench/capi_bench.c
#    `threads 8 1000000 W`: 8 pthreads at once, each scheduling and
#    completing 125 000 empty jobs one by one through jobsys_schedule +
#    jobsys_complete, on one system with W workers (W = 2, then 0). Figure:
#    median over the rounds of wall-clock ns per job.
# 2. W1 "single" (schedule + complete of an empty job, 65 000 times, 0
#    workers) through the C API (`capi_bench w1`) against the same kernel
#    in Rust (crates/jobsys-w1 `--case single`, built with jobsys's `trace`
#    feature as the C API's library is), alternating, 5 samples each per
#    round. Figure: median of all samples, ns per job.
# 3. PERF=1 (default 1 when `perf` works): every run of step 1 under
#    `perf stat`: CPU time of all its threads per job and futex syscalls
#    per job, medians over the rounds.
# 4. BASE=REV (optional): the same C program linked against the C API of
#    commit REV (e.g. b5abc84, the last with the handle table), built from
#    `git archive REV` in a temporary directory with its own target
#    directory, as a variant "base" of steps 1 and 2 in the same rounds
#    (the program must build against both headers: it uses only
#    jobsys_schedule with a NULL desc and jobsys_complete).
#
# Instructions per job (independent of load): scripts/w1-instructions.sh
# for the Rust kernel; for the C one, callgrind on `capi_bench w1` (the
# difference of a 5-sample and a 1-sample run).
#
# Usage: bash scripts/capi-bench.sh            (ROUNDS=7 THREADS=8 JOBS=1000000 WORKERS="2 0")
#        BASE=b5abc84 bash scripts/capi-bench.sh
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

variants="now"
if [ -n "${BASE:-}" ]; then
  mkdir "$out/base"
  git archive "$BASE" | tar -x -C "$out/base"
  (cd "$out/base" && CARGO_TARGET_DIR=$target/capi-bench-base cargo build -q --release -p jobsys-capi)
  cc -std=c11 -O2 -g -Wall -Wextra -Werror -I "$out/base/crates/jobsys-capi/include" \
    crates/jobsys-capi/bench/capi_bench.c "$target/capi-bench-base/release/libjobsys_capi.a" \
    -lpthread -ldl -lm -o "$out/capi_bench_base"
  variants="base now"
fi
perf=0
if [ "${PERF:-1}" = 1 ] && perf stat -e syscalls:sys_enter_futex true >/dev/null 2>&1; then perf=1; fi
# run_variant V ARGS...: capi_bench of variant V (under perf stat if PERF),
# one line: its own, tagged, plus cpu_ns_per_job and futex_per_job.
run_variant() {
  local v=$1 cmd line
  shift
  if [ "$v" = base ]; then cmd=("$out/capi_bench_base"); else cmd=("$bin"); fi
  if [ "$perf" = 1 ]; then
    line=$(perf stat -x, -e task-clock,syscalls:sys_enter_futex -o "$out/perf" \
      "${cmd[@]}" "$@" 2>"$out/err")
    line+=$(awk -F, -v j="$jobs" '/task-clock/ { t = $1 } /sys_enter_futex/ { f = $1 }
      END { printf " cpu_ns_per_job=%.1f futex_per_job=%.4f", t * 1e6 / j, f / j }' "$out/perf")
  else
    line=$("${cmd[@]}" "$@" 2>"$out/err")
  fi
  echo "variant=$v $line"
}

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "load before: $(cat /proc/loadavg)"
for r in $(seq "$rounds"); do
  for w in $workers; do
    if [ $((r % 2)) -eq 1 ]; then order=$variants; else order=$(tr ' ' '\n' <<<"$variants" | tac | xargs); fi
    for v in $order; do
      run_variant "$v" threads "$threads" "$jobs" "$w" >>"$out/threads"
    done
  done
  if [ $((r % 2)) -eq 1 ]; then
    "$bin" w1 5 >>"$out/w1-c"
    "$rust_w1" --case single --workers 0 --warmup 1 --samples 5 >>"$out/w1-rust"
  else
    "$rust_w1" --case single --workers 0 --warmup 1 --samples 5 >>"$out/w1-rust"
    "$bin" w1 5 >>"$out/w1-c"
  fi
  if [ -n "${BASE:-}" ]; then "$out/capi_bench_base" w1 5 >>"$out/w1-base"; fi
done
echo "load after: $(cat /proc/loadavg)"

# median [FORMAT] / minmax [FORMAT]: of the numbers on stdin, one a line.
median() { sort -g | awk -v f="${1:-%.2f}" '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf f "\n", m }'; }
minmax() { sort -g | awk -v f="${1:-%.2f}" 'NR == 1 { lo = $1 } { hi = $1 } END { printf f "-" f, lo, hi }'; }

echo
echo "variants: now = this tree${BASE:+, base = commit $BASE}"
echo "threads at once: $threads threads x $((jobs / threads)) jobs at once, wall ns/job, median of $rounds rounds (range)"
for w in $workers; do
  for v in $variants; do
    lines=$(grep "^variant=$v .* workers=$w " "$out/threads")
    vals=$(sed 's/.* ns_per_job=\([0-9.]*\).*/\1/' <<<"$lines")
    printf '  workers %s, %-4s: %s  (%s)' "$w" "$v" "$(median <<<"$vals")" "$(minmax <<<"$vals")"
    if [ "$perf" = 1 ]; then
      cpu=$(sed 's/.*cpu_ns_per_job=\([0-9.]*\).*/\1/' <<<"$lines")
      fx=$(sed 's/.*futex_per_job=\([0-9.]*\).*/\1/' <<<"$lines")
      printf '   cpu ns/job %s (%s)   futex/job %s' "$(median <<<"$cpu")" "$(minmax <<<"$cpu")" "$(median <<<"$fx")"
    fi
    echo
  done
done

echo
echo "W1 single (65 000 x schedule + complete, 0 workers), ns/job, median of $((rounds * 5)) samples (range)"
c=$(sed 's/.*ns_per_job=//' "$out/w1-c" | tr ',' '\n')
rs=$(sed 's/.*"samples":\[\([^]]*\)\].*/\1/' "$out/w1-rust" | tr ',' '\n')
printf '  C API (jobsys_schedule/jobsys_complete): %s  (%s)\n' "$(median <<<"$c")" "$(minmax <<<"$c")"
printf '  Rust (js.schedule/js.try_complete):      %s  (%s)\n' "$(median <<<"$rs")" "$(minmax <<<"$rs")"
if [ -n "${BASE:-}" ]; then
  bs=$(sed 's/.*ns_per_job=//' "$out/w1-base" | tr ',' '\n')
  printf '  C API of %s:                     %s  (%s)\n' "$BASE" "$(median <<<"$bs")" "$(minmax <<<"$bs")"
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
