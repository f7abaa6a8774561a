#!/usr/bin/env bash
# run.sh BINARY SECONDS — run the libFuzzer binary fuzz_<name> for SECONDS
# on a work corpus under build-fuzz/fuzz/<name>/ with fuzz/<name>.dict. Seeds:
# for the log decoder, built by fuzz/make_seeds.c (plain libzstd, independent
# of cairn's writer) plus fuzz/log_seeds/ (inputs that once failed); for the
# others, the files in fuzz/<name>_seeds/. Exits
# non-zero when the fuzzer finds a crash, a leak, a timeout or an invariant
# violation (artifacts are kept beside the corpus).
set -euo pipefail
bin=${1:?usage: fuzz/run.sh BINARY SECONDS}
secs=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
name=$(basename "$bin")
name=${name#fuzz_}
work=${FUZZ_WORK:-$root/build-fuzz/fuzz}/$name
[ -x "$bin" ] || { echo "run.sh: no fuzzer binary '$bin' (make fuzz builds it)" >&2; exit 2; }
[ -f "$here/$name.dict" ] || { echo "run.sh: no dictionary fuzz/$name.dict" >&2; exit 2; }
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"

if [ "$name" = log ]; then
	cc=${CC_SEEDS:-cc}
	# shellcheck disable=SC2046
	"$cc" -std=c11 -O1 -Wall -Wextra -Werror -o "$work/make_seeds" "$here/make_seeds.c" \
		$(pkg-config --cflags --libs libzstd)
	"$work/make_seeds" "$work/seeds"
	# and the inputs that once failed, replayed on every run
	cp "$here/log_seeds/"* "$work/seeds/"
else
	cp "$here/${name}_seeds/"* "$work/seeds/"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
echo "fuzz: $(basename "$bin") for ${secs}s, corpus $work/corpus"
set +e
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
	-dict="$here/$name.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
	"$work/corpus" "$work/seeds" >"$work/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added|Done )' "$work/fuzz.log" || true
if [ "$rc" -ne 0 ]; then
	tail -n 60 "$work/fuzz.log" >&2
	echo "fuzz: FAILED (exit $rc); reproduce with: $bin $work/artifacts/<file>" >&2
	exit 1
fi
echo "fuzz: ok ($(find "$work/corpus" -type f | wc -l) corpus inputs)"
