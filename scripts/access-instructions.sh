#!/usr/bin/env bash
# Instructions per declared access that deriving dependencies costs
# (docs/access.md), counted by callgrind, so independent of machine load:
# the W3 frame at 0 workers with explicit edges and with declared access
# (crates/jobsys-lab/examples/access_instructions.rs). Each side's second
# call (after a warm-up call) is counted with --toggle-collect; the figure
# is (access - explicit) / (frames x accesses per frame).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build -q --release -p jobsys-lab --example access_instructions
bin=$target/release/examples/access_instructions
info=$("$bin")
frames=$(echo "$info" | awk '{print $2}')
per_frame=$(echo "$info" | awk '{print $4}')
count() {
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="*$1*" "$bin" >/dev/null 2>&1
  # Two calls are counted (warm-up and measured); the totals line sums both.
  local total
  total=$(grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}')
  rm -f "$out"
  echo "$total"
}
explicit=$(count explicit_frames)
access=$(count access_frames)
echo "explicit: $explicit instructions, access: $access instructions (2 x $frames frames each, $per_frame declared accesses per frame)"
awk -v a="$access" -v e="$explicit" -v f="$frames" -v n="$per_frame" \
  'BEGIN { printf "deriving costs %.1f instructions per declared access\n", (a - e) / (2 * f * n) }'
