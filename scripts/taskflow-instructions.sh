#!/usr/bin/env bash
# Instructions per task of Taskflow's benchmark programs linear_chain,
# binary_tree and wavefront on jobsys through jobsys.hpp, at one thread
# (the caller, no workers), counted by callgrind: a run of 3 rounds minus a
# run of 1, over 2 rounds, so the first round's page, deque and name costs
# are left out. Load-independent, unlike the timings of
# scripts/taskflow-programs.sh.
#
# With --check, each count must be within its budget below (about 5 %
# above what the dependency path costs now), as CI runs it: a change that
# makes a dependent job dearer fails there.
#
# Usage: bash scripts/taskflow-instructions.sh [--check]   (needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cxx=${CXX:-c++}
out=$(mktemp -d /tmp/taskflow-instructions.XXXXXX)
trap 'rm -rf "$out"' EXIT
command -v valgrind >/dev/null || { echo "taskflow-instructions: valgrind not found" >&2; exit 1; }

cargo build -q --release -p jobsys-capi
dir=crates/jobsys-bench/cpp/taskflow_programs
"$cxx" -std=c++20 -O2 -pthread -I crates/jobsys-capi/include -I "$dir" \
  "$dir/count_main.cpp" "$target/release/libjobsys_capi.a" -ldl -lm -o "$out/count"

refs() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$out/count" "$@" 2>&1 |
    sed -n 's/.*refs: *//p' | tr -d ,
}
check=${1:-}
over=0
echo "program tasks instructions_per_task budget"
# program, size argument, tasks, budget (instructions per task)
for spec in "linear_chain 8192 8192 1050" "binary_tree 13 8191 1275" "wavefront 90 8100 1510"; do
  set -- $spec
  one=$(refs "$1" "$2" 1)
  three=$(refs "$1" "$2" 3)
  per=$(awk -v a="$one" -v b="$three" -v n="$3" 'BEGIN { printf "%.1f", (b - a) / 2 / n }')
  echo "$1 $3 $per $4"
  if awk -v x="$per" -v b="$4" 'BEGIN { exit !(x > b) }'; then
    over=1
  fi
done
if [ "$check" = --check ]; then
  if [ "$over" = 1 ]; then
    echo "taskflow-instructions: a program is over its budget" >&2
    exit 1
  fi
  echo "taskflow-instructions: every program within its budget"
fi
