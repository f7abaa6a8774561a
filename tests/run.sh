#!/usr/bin/env bash
# The whole suite: every cmocka unit binary (TAP output), every CLI script in
# tests/cli/ and every chat-screen script in tests/tui/ (TAP lines too),
# each in its own process with a timeout. Ends
# with "N passed, N failed"; exits non-zero when anything failed.
set -u
BUILD=${BUILD:-build}
export CAIRN="$PWD/$BUILD/cairn" CAIRN_BUILD="$PWD/$BUILD"
pass=0
fail=0
failed_names=()

count() { # $1 name, $2 exit code, $3 output
	local p f
	p=$(grep -c '^ok ' <<<"$3")
	f=$(grep -c '^not ok ' <<<"$3")
	if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1 # crashed or exited early: count it as a failure
	fi
	if [ "$f" -gt 0 ]; then
		printf '%s\n' "$3" | grep -v '^ok ' | tail -n 60
		failed_names+=("$1")
	fi
	printf '%-34s %4d passed, %d failed\n' "$1" "$p" "$f"
	pass=$((pass + p))
	fail=$((fail + f))
}

# One binary per tests/unit/test_*.c: a binary left in $BUILD by a test
# file since renamed or split is not run (it would count its tests twice).
for src in tests/unit/test_*.c; do
	t="$BUILD/tests/$(basename "$src" .c)"
	if [ ! -x "$t" ]; then
		count "$(basename "$t")" 1 "not built: $t"
		continue
	fi
	out=$(cd "$(mktemp -d)" && CMOCKA_MESSAGE_OUTPUT=TAP timeout 900 "$OLDPWD/$t" 2>&1)
	count "$(basename "$t")" $? "$out"
done
for s in tests/cli/test_*.sh tests/tui/test_*.sh; do
	[ -f "$s" ] || continue
	out=$(timeout 900 bash "$s" 2>&1)
	count "$(basename "$s")" $? "$out"
done
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
