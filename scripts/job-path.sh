#!/usr/bin/env bash
# One job's path through the core, for the structure of crates/jobsys/src:
# a debug build of scripts/job-path (schedule a job, a second one after it,
# complete the second, at 0 workers, after three warm-up rounds) stepped
# line by line in gdb from jobpath_begin to jobpath_end. Prints the core
# files the path passes through, how often control moves between files, and
# the calls into each file. A debug build keeps every function a frame, so
# the counts follow the source's structure, not the optimiser's inlining.
#
# Usage: bash scripts/job-path.sh        (needs gdb with Python)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}/job-path
(cd scripts/job-path && CARGO_TARGET_DIR=$target cargo build -q)
out=$(mktemp /tmp/job-path.XXXXXX.json)
trap 'rm -f "$out"' EXIT
OUT=$out gdb -batch -x scripts/job-path/path.py "$target/debug/job-path" >/dev/null 2>&1 ||
  { echo "job-path: gdb failed (is gdb with Python installed?)" >&2; exit 1; }
python3 scripts/job-path/report.py "$out"
