#!/usr/bin/env bash
# A deeper loom run than CI's: every loom model in the jobsys crate (the
# sleep/wake protocol and the whipping-boy hand-over in
# crates/jobsys/src/sleep/loom_tests.rs, the remote-free stack in
# crates/jobsys/src/store.rs, and any other `#[cfg(all(test, loom))]` test),
# one at a time, with a higher preemption bound than CI (CI uses 3).
#
# Usage: bash scripts/loom-deep.sh [BOUND]        (default 5)
#        LOOM_DEEP_BOUND=6 bash scripts/loom-deep.sh
#        bash scripts/loom-deep.sh 5 sleep::       (only models matching a filter)
#
# Each model runs in its own test process (--exact, --test-threads=1,
# --nocapture) so its elapsed time is printed on its own; a summary table
# follows. The search grows quickly with the bound: at 5 the whole run took
# about 11 minutes on a quiet 2-vCPU machine; run it niced and in the
# background on a shared one.
set -euo pipefail
cd "$(dirname "$0")/.."

bound=${1:-${LOOM_DEEP_BOUND:-5}}
filter=${2:-}
case $bound in
  '' | *[!0-9]*)
    echo "loom-deep: the bound must be a non-negative integer, got '$bound'" >&2
    exit 2
    ;;
esac

export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR=target/loom
export LOOM_MAX_PREEMPTIONS=$bound
export CARGO_TERM_COLOR=never

echo "== loom-deep: LOOM_MAX_PREEMPTIONS=$bound, $(date -Is)"
cargo test -p jobsys --lib --release --no-run

# The loom models: the tests of the lib target built with --cfg loom that live
# in a `loom_tests` module (sleep/loom_tests.rs, store.rs). The big unit-test
# module is compiled out there (lib.rs: `#[cfg(all(test, not(loom)))] mod
# tests`); the few plain unit tests that remain (desc, sleep::adaptive,
# topology::plan) do not use loom and run once, together, at the end.
all_tests=$(cargo test -q -p jobsys --lib --release -- --list --format terse 2>/dev/null |
  sed -n 's/: test$//p')
mapfile -t models < <(grep -F -- 'loom_tests::' <<<"$all_tests" | grep -F -- "$filter" || true)
if [ ${#models[@]} -eq 0 ]; then
  echo "loom-deep: no loom models found (filter '$filter')" >&2
  exit 1
fi
echo "== ${#models[@]} models: ${models[*]}"

total_start=$(date +%s)
summary=()
failed=0
for m in "${models[@]}"; do
  echo
  echo "== $m (LOOM_MAX_PREEMPTIONS=$bound)"
  start=$(date +%s.%N)
  if cargo test -q -p jobsys --lib --release -- --exact "$m" --test-threads=1 --nocapture; then
    result=ok
  else
    result=FAILED
    failed=1
  fi
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  printf '== %s: %s in %.1f s\n' "$m" "$result" "$secs"
  summary+=("$(printf '%-60s %-6s %8.1f s' "$m" "$result" "$secs")")
done

if [ -z "$filter" ]; then
  echo
  echo "== the plain unit tests left in the --cfg loom build (no loom model)"
  if cargo test -q -p jobsys --lib --release -- --skip loom_tests:: --test-threads=1; then
    summary+=("$(printf '%-60s %-6s' "(plain unit tests, --skip loom_tests::)" ok)")
  else
    summary+=("$(printf '%-60s %-6s' "(plain unit tests, --skip loom_tests::)" FAILED)")
    failed=1
  fi
fi

echo
echo "== loom-deep summary (LOOM_MAX_PREEMPTIONS=$bound, finished $(date -Is))"
printf '%s\n' "${summary[@]}"
echo "total: $(($(date +%s) - total_start)) s"
exit $failed
