#!/usr/bin/env bash
# Miri over the unsafe core (crates/jobsys/src/tests.rs: slots, generations,
# remote frees, edge blocks, parallel_for pieces, stack jobs, failures), with
# small sizes and several scheduling seeds.
#
# Flags, and why:
#  -Zmiri-tree-borrows: crossbeam-epoch (under crossbeam-deque) fails Stacked
#     Borrows in its intrusive list (int-to-pointer casts); Tree Borrows is the
#     newer aliasing model and accepts it. Our own code passes both models as
#     far as the runs reach.
#  -Zmiri-permissive-provenance: the same crossbeam-epoch casts.
#  -Zmiri-ignore-leaks: crossbeam-epoch's global collector is a static that is
#     never freed (by design). Our own leaks are covered by the counted
#     shutdown tests and valgrind in CI.
#  -Zmiri-disable-isolation: worker threads read the clock (spin budgets).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1 || true
seeds=${MIRI_SEEDS:-"1 2 3"}
for seed in $seeds; do
  echo "== miri seed $seed"
  CARGO_TARGET_DIR=target/miri \
  MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks -Zmiri-seed=$seed" \
    cargo +nightly miri test -p jobsys --lib "$@"
done
