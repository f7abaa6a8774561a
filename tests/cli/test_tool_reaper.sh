#!/usr/bin/env bash
# A shell command does not outlive cairn: cairn -p runs a command through
# the offline provider (--approve all) and is killed with SIGKILL while the
# command runs; within a bounded wait no live process of the command's
# group is left (2 s), and its effects that were still to come (a touch after a
# sleep, in the foreground and in a background job) never happen. Then the
# same once the command's main process has exited and a background job
# that ignores TERM is left in the group, while cairn is still waiting for
# it. Processes are found through /proc (a zombie is not alive).
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/config/cairn" "$T/work"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
cd "$T/work" || exit 1

# group_live PGID: the pids of the group's members that are not zombies
# (/proc/PID/stat: "pid (comm) state ppid pgrp ...").
group_live() {
	local pg=$1 f line
	for f in /proc/[0-9]*/stat; do
		{ read -r line <"$f"; } 2>/dev/null || continue
		set -- ${line##*) }
		[ "${3:-}" = "$pg" ] && [ "$1" != Z ] && [ "$1" != X ] && echo "${f//[^0-9]/}"
	done
}
# wait_for SECONDS CMD...: poll CMD every 20 ms until it succeeds; false at the end.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
wait_for() {
	local end=$(($(now_ms) + $1 * 1000))
	shift
	while ! "$@"; do
		[ "$(now_ms)" -ge $end ] && return 1
		sleep 0.02
	done
}
group_empty() { [ -z "$(group_live "$1")" ]; }
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# 1. The command runs: a sleep before a touch, and a background job that
# does the same; cairn dies.
"$CAIRN" -p 'run cut -d" " -f5 /proc/self/stat >pg; (sleep 3; touch Y) & touch started; sleep 4; touch X' --approve all \
	>"$T/out1" 2>"$T/err1" &
C=$!
check "the command started" wait_for 10 test -e started
PG=$(cat pg)
check "... in a group of its own, with its background job" \
	bash -c '[ -n "$1" ] && [ "$1" != "$(cut -d" " -f5 /proc/$2/stat)" ] && [ "$(echo "$3" | wc -l)" -ge 3 ]' \
	_ "$PG" "$C" "$(group_live "$PG")"
kill -9 "$C"
wait "$C" 2>/dev/null
t0=$(now_ms)
check "cairn killed: no live process of the group within 2 s" wait_for 2 group_empty "$PG"
echo "# group gone after $(($(now_ms) - t0)) ms; left: $(group_live "$PG" | tr '\n' ' ')"
# The touches were due 3 and 4 s after the start: wait past them.
sleep 4.5
check "... the foreground touch never ran" test ! -e X
check "... nor the background job's" test ! -e Y
kill -9 -- "-$PG" 2>/dev/null

# 2. The main process has exited; a background job that ignores TERM is
# left in the group and cairn waits for it (TERM now, KILL 2 s later); cairn
# dies in between.
rm -f pg started
"$CAIRN" -p "run (trap '' TERM; cut -d' ' -f5 /proc/self/stat >pg; touch started; sleep 3; touch Z) >/dev/null 2>&1 & echo \$\$ >pid" \
	--approve all >"$T/out2" 2>"$T/err2" &
C=$!
check "the background job started" wait_for 10 test -e started -a -s pid
check "... and the main process exited" wait_for 5 gone "$(cat pid)"
PG=$(cat pg)
check "... found its group" test -n "$PG"
kill -9 "$C"
wait "$C" 2>/dev/null
t0=$(now_ms)
check "cairn killed: no live process of the group within 2 s" wait_for 2 group_empty "$PG"
echo "# group gone after $(($(now_ms) - t0)) ms; left: $(group_live "$PG" | tr '\n' ' ')"
sleep 3.5
check "... the job's touch never ran" test ! -e Z
kill -9 -- "-$PG" 2>/dev/null
finish
