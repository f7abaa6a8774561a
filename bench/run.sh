#!/usr/bin/env bash
# Run every bench binary built into BUILD/bench/ (make bench does this):
# bench_log, bench_cli, bench_catalog, bench_fifo, bench_load, bench_stall,
# bench_turn, bench_continue, bench_render. The programs in BUILD/bench/aux/
# are what bench_turn and bench_continue run beside cairn, not benches: only
# files directly in BUILD/bench/ are run.
# Usage: bench/run.sh [BUILD] [args for the binaries...]
# The temp files go under $BENCH_DIR (default /tmp): point it at the disk
# you want measured. Benches are informational: they exit 0 whatever the
# ratios, non-zero only when something fails.
set -eu
BUILD=${1:-build}
[ $# -gt 0 ] && shift
status=0
found=0
for b in "$BUILD"/bench/*; do
	[ -f "$b" ] && [ -x "$b" ] || continue
	found=1
	echo "== $(basename "$b")"
	"$b" "$@" || status=$?
done
if [ "$found" -eq 0 ]; then
	echo "bench/run.sh: no bench binaries in $BUILD/bench" >&2
	exit 1
fi
exit "$status"
