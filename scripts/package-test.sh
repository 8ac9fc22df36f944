#!/usr/bin/env bash
# The published crate, tested as a user gets it: `cargo package -p jobsys`
# (which also builds the package), then the unpacked .crate's own tests —
# its unit tests and the crate docs' doctests — in a directory outside the
# workspace, offline (the dependencies are those of Cargo.lock, already
# fetched). CI runs it. The repository-only tests (tests/, examples/, the
# README's and docs pages' code blocks in crates/jobsys-doctests) are not in
# the package and run in `cargo test --workspace`.
#
# Usage: bash scripts/package-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo package -p jobsys --allow-dirty --offline
version=$(sed -n 's/^version = "\(.*\)"/\1/p' crates/jobsys/Cargo.toml | head -1)
crate="$target/package/jobsys-$version.crate"
work=$(mktemp -d /tmp/jobsys-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
# -m: the files get the time of extraction, so an earlier run's build in
# the same target directory is never mistaken for fresh.
tar -xzmf "$crate" -C "$work"
echo "package-test: $(tar -tzf "$crate" | wc -l) files in $(basename "$crate")"
cd "$work/jobsys-$version"
CARGO_TARGET_DIR="$target/package-test" cargo test --offline
echo "package-test: the packaged crate's tests pass"
