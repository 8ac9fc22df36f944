#!/usr/bin/env bash
# AddressSanitizer over jobsys (nightly, -Zbuild-std so that std is
# instrumented too): the crate's unit tests (src/tests/) and every
# integration test in crates/jobsys/tests/, wait_ends.rs,
# wait_and_drop_races.rs and thread_exit_and_shutdown.rs (the lifecycle
# regressions: a scope returning while its job lived was a
# stack-use-after-return that TSan, Miri and loom all missed) first.
#
# Usage: bash scripts/asan.sh [test filter ...]   (CI runs it bare)
#
# detect_stack_use_after_return=1 makes a freed stack frame poisoned instead
# of reused, so a job that touches its dead scope's frame is reported;
# detect_leaks=0: the tests leak on purpose in a few places (a system
# dropped inside its own job detaches its workers). Any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup component add rust-src --toolchain nightly >/dev/null 2>&1 || true

target=x86_64-unknown-linux-gnu
export CARGO_TARGET_DIR=target/asan
export RUSTFLAGS="-Zsanitizer=address -Cdebuginfo=1"
export RUSTDOCFLAGS="-Zsanitizer=address"
export CARGO_TERM_COLOR=never
export ASAN_OPTIONS="detect_stack_use_after_return=1 detect_leaks=0 abort_on_error=1 ${ASAN_OPTIONS:-}"
unset JOBSYS_WORKERS JOBSYS_IDLE_POLICY
export RUST_BACKTRACE=0
# ASan runs the suites 2-3x slower: the tests' watchdogs (tests/common) get 2x.
export JOBSYS_WATCHDOG_SCALE=2

start=$(date +%s)
echo "== asan: $(date -Is), $(cargo +nightly --version)"
cargo_asan() {
  cargo +nightly "$1" -Zbuild-std --target "$target" "${@:2}"
}
cargo_asan test -p jobsys --no-run -q
failed=0
for t in wait_ends wait_and_drop_races thread_exit_and_shutdown --lib concurrency handles panics lifecycle parallel_for bad_input \
  engine_cancel engine_pinned engine_threads engine_active access outcomes; do
  if [ "$t" = --lib ]; then sel=(--lib); else sel=(--test "$t"); fi
  echo "== asan: jobsys ${sel[*]}"
  if ! cargo_asan test -q -p jobsys "${sel[@]}" -- "$@"; then
    echo "== asan: FAILED: jobsys ${sel[*]}"
    failed=1
  fi
done
echo "== asan: $(( $(date +%s) - start )) s"
if [ $failed -ne 0 ]; then
  echo "asan: FAILED (a test failed or AddressSanitizer reported an error above)"
  exit 1
fi
echo "asan: clean"
