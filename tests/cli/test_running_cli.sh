#!/usr/bin/env bash
# test_running_cli.sh — a session row left `running` by a process that died
# mid-turn: with its writer lock free it is listed as its log stands
# (interrupted with a turn open, idle once its last turn ended), and `rm`
# and `purge` go through; while another process holds the lock it stays
# running and `rm` is refused as locked (exit 7).
# Needs python3 (its sqlite3 module) and flock(1).
source "$(dirname "$0")/lib.sh"

DB="$CAIRN_HOME/index.db"
mkdir -p "$T/proj"
# set_running ID: the row's status as a writer that died mid-turn left it.
set_running() { python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("UPDATE sessions SET status_override = ? WHERE id = ?", ("running", sys.argv[2])); d.commit()' "$DB" "$1"; }
# status_of ID: the status `cairn sessions --json --all` lists for ID.
status_of() { "$CAIRN" sessions --json --all | python3 -c 'import json,sys; print([s["status"] for s in json.load(sys.stdin) if s["id"]==sys.argv[1]][0])' "$1"; }
# new VAR PROMPT [open]: a session of one turn, ended unless "open".
new() {
	local out ev=('{"type":"turn/start","turn":"t1","data":{}}'
		"{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"$2\"}}")
	[ "${3:-}" = open ] || ev+=('{"type":"turn/end","turn":"t1","data":{"outcome":"completed"}}')
	out=$(printf '%s\n' "${ev[@]}" | "$CAIRN" log append --new --cwd "$T/proj")
	[ -n "$out" ] || not_ok "create session $1" "log append failed"
	printf -v "$1" '%s' "${out%% *}"
}

new A "alpha prompt" open
new B "bravo prompt"
new C "charlie prompt"
"$CAIRN" sessions >/dev/null
set_running "$A"
set_running "$B"
set_running "$C"
check "a running row whose lock is free is listed as interrupted (a turn is open in its log)" \
	test "$(status_of "$A")" = interrupted
# Its process died after its full save reached the log, before the catalog
# recorded it: opening it would find nothing to close.
check "... and as idle when its log has no turn open" test "$(status_of "$C")" = idle

# B's lock held by another process: it is running.
lockB=$(echo "$CAIRN_HOME"/sessions/*/"$B"/session.lock)
rm -f "$T/release"
mkfifo "$T/release"
flock -w 10 "$lockB" cat "$T/release" >/dev/null &
holder=$!
for _ in $(seq 500); do flock -n "$lockB" true || break; sleep 0.01; done
check "a running row whose lock is held is listed as running" test "$(status_of "$B")" = running
expect_code 7 "rm of a session running elsewhere is refused as locked" "$CAIRN" rm "$B"
: >"$T/release"
wait "$holder"

expect_code 0 "rm of a stale running session goes through" "$CAIRN" rm "$A"
check "... it is in the trash" test -d "$(echo "$CAIRN_HOME"/trash/*/"$A")"
set_running "$A" # a row the trash move did not clear, as after a crash
check "a stale running row in the trash is listed as interrupted" test "$(status_of "$A")" = interrupted
expect_code 0 "purge of a stale running session goes through" "$CAIRN" purge --yes "$A"
check "... it is gone" test ! -e "$(echo "$CAIRN_HOME"/trash/*/"$A")"
expect_code 0 "rm of the other one once its lock is free" "$CAIRN" rm "$B"
finish
