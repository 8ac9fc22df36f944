#!/usr/bin/env bash
# Taskflow's own benchmark programs linear_chain, binary_tree and wavefront
# (their Taskflow and oneTBB code as the authors wrote it, vendored in
# crates/jobsys-bench/third_party/taskflow-benchmarks) beside the same task
# graphs on jobsys through jobsys.hpp (crates/jobsys-bench/cpp/taskflow_programs),
# in one process per program and thread count, the libraries alternating
# within each round. oneTBB joins when its headers and library are
# installed (Debian: libtbb-dev); otherwise its column reads "-".
#
# Equal threads: Taskflow's and oneTBB's executors get THREADS workers
# while the calling thread blocks; jobsys gets the calling thread (which
# runs jobs while it waits) plus THREADS - 1 workers.
#
# Usage: bash scripts/taskflow-programs.sh   (THREADS="1 2" LOG=18 WLOG=11 ROUNDS=5)
#        LOG=11 WLOG=9 ROUNDS=1 bash scripts/taskflow-programs.sh   (a smoke run, as CI does)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-1 2}
log=${LOG:-18}
wlog=${WLOG:-11}
rounds=${ROUNDS:-5}
target=${CARGO_TARGET_DIR:-$PWD/target}
out=$(mktemp -d /tmp/taskflow-programs.XXXXXX)
trap 'rm -rf "$out"' EXIT
cxx=${CXX:-c++}

cargo build -q --release -p jobsys-capi
bench=crates/jobsys-bench
tbb=()
if [ "${TBB:-1}" != 0 ] && echo '#include <tbb/flow_graph.h>
int main() { tbb::flow::graph g; g.wait_for_all(); }' |
  "$cxx" -std=c++20 -x c++ - -ltbb -o "$out/tbb-probe" 2>/dev/null; then
  tbb=(-DJOBSYS_PROGRAMS_TBB)
  echo "oneTBB: found"
else
  echo "oneTBB: not found (its column reads -)"
fi
for p in linear_chain binary_tree wavefront; do
  src=("$bench/cpp/taskflow_programs/${p}_main.cpp" "$bench/third_party/taskflow-benchmarks/$p/taskflow.cpp")
  libs=()
  if [ ${#tbb[@]} -gt 0 ]; then
    src+=("$bench/third_party/taskflow-benchmarks/$p/tbb.cpp")
    libs=(-ltbb)
  fi
  "$cxx" -std=c++20 -O2 -pthread "${tbb[@]}" -I crates/jobsys-capi/include \
    -I "$bench/third_party/taskflow" -I "$bench/third_party/taskflow-benchmarks/$p" \
    -I "$bench/cpp/taskflow_programs" "${src[@]}" "$target/release/libjobsys_capi.a" \
    "${libs[@]}" -ldl -lm -o "$out/$p"
done

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "load before: $(cat /proc/loadavg)"
for t in $threads; do
  "$out/linear_chain" "$t" "$log" "$rounds"
  "$out/binary_tree" "$t" "$log" "$rounds"
  "$out/wavefront" "$t" "$wlog" "$rounds"
done
echo "load after: $(cat /proc/loadavg)"
