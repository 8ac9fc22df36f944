#!/usr/bin/env bash
# Instructions per job of W1's jobsys kernels at 0 workers, counted by
# callgrind (independent of machine load), for one commit or the work tree.
#
# Usage: bash scripts/w1-instructions.sh [REV]   (default: the work tree)
#        W1_FEATURES='--features trace' bash scripts/w1-instructions.sh [REV]
#
# W1_ARGS (default: empty) are more arguments for jobsys-w1, e.g.
# W1_ARGS='--hooks elsewhere' (profiler hooks installed in another system).
# W1_FEATURES (default: empty) is passed to the `cargo build` of jobsys-w1.
# jobsys-w1 depends on jobsys without default features, so the default
# build has no tracer; `--features trace` compiles the tracer in (not
# recording). The tracer's off cost per job is the difference between the
# two. Each feature set gets its own target directory.
#
# After each jobsys case come its floor kernels (`CASE:floor-*`,
# crates/jobsys-bench/src/workloads/w1_floor.rs: per job, the least a job
# system does, on one thread; docs/workloads.md, W1), counted the same way;
# a REV older than the floors prints `-` for them; W1_ARGS does not apply to
# them. W1_CASES (default: all,
# in that order) picks others, e.g. W1_CASES='single single:floor-cl'.
#
# For each case: one W1 iteration is counted with
# `--toggle-collect='*w1_kernels::iteration*'` (and
# `'*w1_floor::iteration*'` for the floors); the figure is the difference
# between 5 and 1 counted samples, over 4 iterations and the jobs of one
# iteration (as docs/tracing.md, "Instruction counts"). REV is built in a
# temporary git worktree with its own target directory.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-}
src=$PWD
if [ -n "$rev" ]; then
  src=$(mktemp -d /tmp/w1-instr.XXXXXX)
  git worktree add --detach "$src" "$rev" >/dev/null
  trap 'git worktree remove --force "$src"' EXIT
fi
features=${W1_FEATURES:-}
tag=$(printf '%s' "$features" | tr -c 'A-Za-z0-9_-' '_')
target=${CARGO_TARGET_DIR:-$PWD/target}/w1-instructions/${rev:-worktree}${tag:+-$tag}
# shellcheck disable=SC2086 # W1_FEATURES is a list of cargo arguments
(cd "$src" && CARGO_TARGET_DIR=$target cargo build -q --release -p jobsys-w1 $features)
bin=$target/release/jobsys-w1
args=${W1_ARGS:-}
echo "case instructions_per_job (rev ${rev:-work tree}${features:+, $features}${args:+, $args})"
floors_single='single:floor-cl single:floor-cl-nofence'
floors_flat='flat:floor-cl flat:floor-cl-nofence flat:floor-mem128 flat:floor-mem64'
cases=${W1_CASES:-single $floors_single flat $floors_flat nested nested:floor-fence pfor-empty}
for case in $cases; do
  cargs=$args
  [[ $case == *:* ]] && cargs= # floors run no job system: W1_ARGS is not theirs
  if [[ $case == *:* ]] && ! "$bin" --case "$case" --quick --warmup 0 --samples 1 >/dev/null 2>&1; then
    echo "$case -"
    continue
  fi
  count() {
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" \
      --toggle-collect='*w1_kernels::iteration*' --toggle-collect='*w1_floor::iteration*' \
      "$bin" --case "$case" --warmup 1 --samples "$1" $cargs 2>/dev/null >"$out.json"
    jobs=$(sed -n 's/.*"jobs":\([0-9]*\).*/\1/p' "$out.json")
    sed -n 's/^summary: \([0-9]*\)/\1/p' "$out"
    rm -f "$out" "$out.json"
  }
  i5=$(count 5)
  i1=$(count 1)
  jobs=$("$bin" --case "$case" --warmup 0 --samples 1 $cargs | sed -n 's/.*"jobs":\([0-9]*\).*/\1/p')
  awk -v a="$i5" -v b="$i1" -v j="$jobs" -v c="$case" 'BEGIN { printf "%s %.2f\n", c, (a - b) / 4 / j }'
done
