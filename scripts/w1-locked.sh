#!/usr/bin/env bash
# Locked instructions per job of a W1 kernel at 0 workers: executions of
# `lock`-prefixed, `xchg` and `mfence` instructions inside one counted W1
# iteration, from callgrind's per-instruction counts
# (`--dump-instr=yes`) matched against the binary's `objdump -d`.
# Load-independent, like scripts/w1-instructions.sh (which builds the
# binary this reads).
#
# Usage: bash scripts/w1-locked.sh [CASE] [BINARY]
#   CASE: single (default), flat, nested, pfor-empty, or a floor (CASE:floor-cl)
#   BINARY: a jobsys-w1 build (default: the work tree's, as built by
#   scripts/w1-instructions.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
case=${1:-single}
bin=${2:-${CARGO_TARGET_DIR:-$PWD/target}/w1-instructions/worktree/release/jobsys-w1}
if [ ! -x "$bin" ]; then
  echo "w1-locked: no $bin; run scripts/w1-instructions.sh first, or pass a binary" >&2
  exit 1
fi
out=$(mktemp)
trap 'rm -f "$out" "$out.json"' EXIT
valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$out" \
  --toggle-collect='*w1_kernels::iteration*' --toggle-collect='*w1_floor::iteration*' \
  "$bin" --case "$case" --warmup 1 --samples 2 2>/dev/null >"$out.json"
# Warm-up and samples are all counted: 3 iterations.
jobs=$(sed -n 's/.*"jobs":\([0-9]*\).*/\1/p' "$out.json")
python3 - "$out" "$bin" "$((jobs * 3))" "$case" <<'PY'
import collections, re, subprocess, sys
cg, binary, jobs, case = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
cost = collections.Counter()
last, skip, npos = 0, False, 1
for line in open(cg):
    if line.startswith("positions:"):
        npos = len(line.split()) - 1
        continue
    if line.startswith("calls="):
        skip = True  # the next cost line is the call's inclusive cost
        continue
    m = re.match(r"^(0x[0-9a-fA-F]+|[+-][0-9]+|\*)(\s.*)?$", line.rstrip("\n"))
    if not m:
        continue
    tok = m.group(1)
    if tok.startswith("0x"):
        last = int(tok, 16)
    elif tok != "*":
        last += int(tok)
    fields = (m.group(2) or "").split()[npos - 1:]
    if skip:
        skip = False
        continue
    if fields:
        cost[last] += int(fields[0])
dis = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", binary],
                     capture_output=True, text=True, check=True).stdout
total, where, fn = 0, collections.Counter(), ""
for l in dis.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.*)>:", l)
    if m:
        fn = m.group(2)
        continue
    m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)(\s+\S+)?", l)
    if not m:
        continue
    op = m.group(2) + ((m.group(3) or "") if m.group(2) == "lock" else "")
    if m.group(2) in ("lock", "xchg", "mfence") and cost[int(m.group(1), 16)]:
        n = cost[int(m.group(1), 16)]
        total += n
        where[(op.split()[0] + " " + op.split()[1] if " " in op.strip() else op, fn)] += n
print(f"{case} locked_per_job {total / jobs:.3f}")
for (op, f), n in where.most_common():
    if n / jobs >= 0.001:
        print(f"  {n / jobs:.3f} {op} in {f[:90]}")
PY
