#!/usr/bin/env bash
# test_full_disk.sh — a full file system and a read-only data root, on a
# real small tmpfs mounted by the test: read-only commands work on both;
# on a full disk an append fails cleanly and loses nothing, appends work
# again as soon as 16 KiB are freed (even while the catalog's WAL holds
# pages it has no room to copy back), and the catalog catches up once there
# is room. Mounting needs root, or a user namespace (unshare -rm); where
# neither is permitted the read-only root is made with chmod instead and the
# full-disk part says so.
# Needs python3 (JSON checks and a second SQLite reader) and coreutils.
if [ -z "${FULLDISK_NS:-}" ] && [ "$(id -u)" -ne 0 ] &&
	unshare -rm true 2>/dev/null; then
	FULLDISK_NS=1 exec unshare -rm bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh" || exit 1
: "${T:?}"

M="$T/mnt"
R="$M/root"
mkdir -p "$M"
MOUNTED=0
if mount -t tmpfs -o size=2m,mode=0700 tmpfs "$M" 2>"$T/mount.err"; then
	MOUNTED=1
	trap 'kill_reader; umount "$T/ro" 2>/dev/null; umount "$M" 2>/dev/null || umount -l "$M"; rm -rf "$T"' EXIT
else
	trap 'kill_reader; umount "$T/ro" 2>/dev/null; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
fi
READER=

# words N SEED: N pseudo-words, the same for the same SEED.
words() { awk -v n="$1" -v s="$2" 'BEGIN { srand(s); c = "bcdfghjklmnprstvwz"; v = "aeiou";
	for (i = 0; i < n; i++) { w = ""; k = 1 + int(rand() * 4);
		for (j = 0; j < k; j++) w = w substr(c, 1 + int(rand() * 18), 1) substr(v, 1 + int(rand() * 5), 1);
		printf "%s ", w } }'; }
# new_session SEED: a session with one message of 200 words; prints its id.
new_session() {
	printf '{"type":"user/message","turn":"t1","data":{"text":"hello %s"}}\n' "$(words 200 "$1")" |
		"$CAIRN" --data-dir "$R" log append --new | cut -d' ' -f1
}
# append ID TEXT: append one small event at the log's next seq.
append() {
	local seq
	seq=$("$CAIRN" --data-dir "$R" log cat "$1" | wc -l)
	printf '{"type":"user/message","turn":"t9","data":{"text":"%s"}}\n' "$2" |
		"$CAIRN" --data-dir "$R" log append --expect-seq "$seq" "$1" >/dev/null 2>"$T/append.err"
}
# fill: take every free byte of the tmpfs.
fill() { dd if=/dev/zero of="$M/filler.$1" bs=4k 2>/dev/null; true; }
# free_kib N: give N KiB back.
free_kib() {
	local f="$M/filler.$1" sz
	sz=$(stat -c %s "$f")
	truncate -s $((sz - $2 * 1024)) "$f"
}
avail_kib() { df -k --output=avail "$M" | tail -1 | tr -d ' '; }
# pin: a second SQLite reader holds a read transaction on index.db (as the
# interactive client may): no checkpoint gets past it, so what is written
# meanwhile stays in the WAL. unpin ends it; kill_reader kills it.
pin() {
	# The last pin's "pinned" must not be taken for this one's (the
	# shell truncates pin.out only once the reader has started).
	rm -f "$T/gate" "$T/pin.out"
	mkfifo "$T/gate"
	python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN")
db.execute("SELECT count(*) FROM sessions").fetchall()
print("pinned", flush=True)
open(sys.argv[2]).read()
db.execute("COMMIT")
db.close()
' "$R/index.db" "$T/gate" >"$T/pin.out" &
	READER=$!
	# Python may take seconds to start on a loaded machine: wait for it,
	# and say so if it never came (what follows would not be pinned).
	for _ in $(seq 1200); do grep -q pinned "$T/pin.out" 2>/dev/null && break; sleep 0.05; done
	check "a second reader holds a read transaction" grep -q pinned "$T/pin.out"
}
unpin() { echo >"$T/gate"; wait "$READER"; READER=; }
kill_reader() { if [ -n "${READER:-}" ]; then kill -9 "$READER" 2>/dev/null; wait "$READER" 2>/dev/null; READER=; fi; }
# lists_id ID: is $OUT a JSON list with a session ID?
lists_id() {
	python3 -c 'import json,sys
try: v = json.loads(sys.argv[1])
except ValueError: sys.exit(1)
sys.exit(0 if any(s["id"] == sys.argv[2] for s in v) else 1)' "$OUT" "$1"
}
# read_only_commands WHAT ID: every command that only reads works.
read_only_commands() {
	expect_code 0 "$1: sessions" "$CAIRN" --data-dir "$R" sessions
	check "$1: sessions lists $2" grep -q "$2" <<<"$OUT"
	expect_code 0 "$1: sessions --json" "$CAIRN" --data-dir "$R" sessions --json
	check "$1: sessions --json is a list with $2" lists_id "$2"
	expect_code 0 "$1: search" "$CAIRN" --data-dir "$R" search hello
	check "$1: search finds $2" grep -q "$2" <<<"$OUT"
	expect_code 0 "$1: inspect" "$CAIRN" --data-dir "$R" inspect "$2"
	expect_code 0 "$1: log cat" "$CAIRN" --data-dir "$R" log cat "$2"
	expect_code 0 "$1: doctor" "$CAIRN" --data-dir "$R" doctor
	check "$1: doctor found no problem" grep -q ", 0 problems" <<<"$OUT"
}

# make_ro: a read-only view of $R in RO_R: the tmpfs remounted read-only,
# else a read-only bind mount (a user namespace), else chmod (not root).
# undo_ro makes it writable again.
make_ro() {
	RO_HOW=
	if [ "$MOUNTED" -eq 1 ] && mount -o remount,ro "$M" 2>/dev/null; then
		RO_R=$R RO_HOW=remount
	elif mkdir -p "$T/ro" && mount --bind "$R" "$T/ro" 2>/dev/null; then
		if mount -o remount,bind,ro "$T/ro" 2>/dev/null; then
			RO_R="$T/ro" RO_HOW=bind
		else
			umount "$T/ro"
		fi
	fi
	if [ -z "$RO_HOW" ]; then
		chmod -R a-w "$R"
		if touch "$R/.probe" 2>/dev/null; then
			rm -f "$R/.probe"
			chmod -R u+w "$R"
			return 1
		fi
		RO_R=$R RO_HOW=chmod
	fi
	echo "# read-only root by $RO_HOW"
}
undo_ro() {
	case $RO_HOW in
	remount) mount -o remount,rw "$M" ;;
	bind) umount "$T/ro" ;;
	chmod) chmod -R u+w "$R" ;;
	esac
}
# read_only_root ID: on a read-only root every command that only
# reads works, an append fails; then again with a session only in the
# -wal, and a -shm, left by a process killed while it held the catalog.
read_only_root() {
	local W=$R C
	if ! make_ro; then
		ok "# SKIP read-only root: neither mount nor chmod can make one here"
		return
	fi
	R=$RO_R
	read_only_commands "read-only root" "$1"
	check "read-only root: sessions says the catalog may lag" bash -c \
		'"$1" --data-dir "$2" sessions 2>&1 >/dev/null | grep -q "could not be brought up to date"' _ "$CAIRN" "$R"
	local seq
	seq=$("$CAIRN" --data-dir "$R" log cat "$1" | wc -l)
	expect_code 1 "read-only root: an append fails" bash -c \
		"echo '{\"type\":\"x\"}' | '$CAIRN' --data-dir '$R' log append --expect-seq $seq '$1'"
	R=$W
	undo_ro
	pin
	C=$(new_session 99)
	kill_reader # killed: -wal and -shm stay, C is only in the WAL
	check "the WAL holds the last session" test -s "$R/index.db-wal" -a -f "$R/index.db-shm"
	make_ro || return
	R=$RO_R
	read_only_commands "read-only root, WAL left" "$C"
	R=$W
	undo_ro
}

# from_logs WHAT ID: on a read-only root whose index.db cannot be read,
# sessions and search read the logs themselves and say so, doctor verifies
# the logs and notes the catalog, and nothing is written.
from_logs() {
	local W=$R
	if ! make_ro; then
		ok "# SKIP $1: neither mount nor chmod can make a read-only root here"
		return
	fi
	R=$RO_R
	local before
	before=$(ls -la "$R")
	expect_code 0 "$1: sessions" "$CAIRN" --data-dir "$R" sessions
	check "$1: sessions lists $2" grep -q "$2" <<<"$OUT"
	check "$1: sessions says it read the logs" grep -q "could not be used .*: read from the logs" <<<"$ERR"
	expect_code 0 "$1: sessions --json" "$CAIRN" --data-dir "$R" sessions --json
	check "$1: sessions --json lists $2" lists_id "$2"
	expect_code 0 "$1: search" "$CAIRN" --data-dir "$R" search hello
	check "$1: search finds $2" grep -q "$2" <<<"$OUT"
	check "$1: search says it read the logs" grep -q "read from the logs" <<<"$ERR"
	expect_code 0 "$1: doctor" "$CAIRN" --data-dir "$R" doctor
	check "$1: doctor notes the catalog unusable, finds no problem" \
		bash -c 'grep -q "^index: unusable: .*the logs are verified without it" <<<"$1" &&
			grep -q ", 0 problems" <<<"$1"' _ "$OUT"
	check "$1: nothing was written" test "$(ls -la "$R")" = "$before"
	R=$W
	undo_ro
}
# watermark_unreadable: the WAL holds commits and its -shm is gone (a copy
# that left it behind): on a read-only root the catalog cannot be read,
# nor a session's watermark, so a cut below it cannot be told from a torn
# tail; log cat says so instead of passing over it in silence.
watermark_unreadable() {
	local W=$R E log
	E=$(new_session 98)
	log=$(echo "$R"/sessions/*/"$E"/session.jsonl.zst)
	pin
	new_session 97 >/dev/null
	kill_reader # -wal and -shm stay
	cp "$log" "$T/saved.zst"
	truncate -s $(($(stat -c %s "$log") - 5)) "$log"
	expect_code 4 "a cut below the watermark, the catalog readable: corrupt" \
		"$CAIRN" --data-dir "$R" log cat "$E"
	rm -f "$R/index.db-shm" # (a reader on a writable root makes it again)
	check "the WAL holds commits, no -shm" test -s "$R/index.db-wal" -a ! -e "$R/index.db-shm"
	if make_ro; then
		R=$RO_R
		expect_code 0 "read-only root, catalog unreadable: log cat reads what is whole" \
			"$CAIRN" --data-dir "$R" log cat "$E"
		check "... and says the watermark could not be read" \
			grep -q "durable watermark could not be read (.*): damage at the end" <<<"$ERR"
		R=$W
		undo_ro
	else
		ok "# SKIP read-only root: neither mount nor chmod can make one here"
	fi
	cat "$T/saved.zst" >"$log"
}
# user_version [N]: print index.db's schema version, or set it to N.
user_version() {
	python3 -c 'import sqlite3,sys
db = sqlite3.connect(sys.argv[1])
if len(sys.argv) > 2: db.execute("PRAGMA user_version=%d" % int(sys.argv[2])); db.commit()
else: print(db.execute("PRAGMA user_version").fetchone()[0])
db.close()' "$R/index.db" "$@"
}
# no_catalog ID: from_logs without index.db, then with one of another schema.
no_catalog() {
	local v
	mkdir -p "$T/saved-db"
	mv "$R"/index.db* "$T/saved-db/"
	from_logs "read-only root, no index.db" "$1"
	mv "$T/saved-db/"* "$R/"
	v=$(user_version)
	user_version $((v - 1))
	from_logs "read-only root, index.db of schema $((v - 1))" "$1"
	user_version "$v"
	expect_code 0 "the catalog is of use again" "$CAIRN" --data-dir "$R" sessions
	check "... and says nothing of the logs" test -z "$ERR"
}

if [ "$MOUNTED" -eq 1 ]; then
	echo "# a 2 MiB tmpfs"
	mkdir -m 700 "$R"
	ids=()
	for i in $(seq 1 12); do ids+=("$(new_session "$i")"); done
	A=${ids[0]}
	check "sessions were created" test -n "$A" -a -f "$R/index.db"

	# --- a full disk, the catalog closed cleanly (no -wal, no -shm) ---
	fill 1
	check "the file system is full" test "$(avail_kib)" -eq 0
	read_only_commands "full disk" "$A"
	# The watermark is read on a full disk too: a log cut inside its last
	# frame, below the watermark, is damage, not a torn tail.
	D=${ids[1]}
	dlog=$(echo "$R"/sessions/*/"$D"/session.jsonl.zst)
	cp "$dlog" "$T/saved.zst"
	truncate -s $(($(stat -c %s "$dlog") - 5)) "$dlog"
	expect_code 4 "full disk: a cut below the watermark is corruption, not a torn tail" \
		"$CAIRN" --data-dir "$R" log cat "$D"
	cat "$T/saved.zst" >"$dlog"
	expect_code 0 "full disk: whole again" "$CAIRN" --data-dir "$R" log cat "$D"
	# Fill the log's last page too: then an append needs new space. The
	# append that failed did not fit in what is left of the page; the
	# same text again may (a frame's length varies by a few bytes with its
	# time and seq, measured 95 to 99 bytes for one text): the append that
	# must fail carries LONGER, tens of bytes more than any such jitter.
	LONGER=" $(words 30 7)"
	for i in $(seq 1 200); do append "$A" "filler $i" || break; done
	before=$("$CAIRN" --data-dir "$R" log cat "$A")
	seq=$(wc -l <<<"$before")
	expect_code 1 "full disk: an append fails with an I/O error" bash -c \
		"echo '{\"type\":\"user/message\",\"turn\":\"t9\",\"data\":{\"text\":\"filler $i$LONGER\"}}' | '$CAIRN' --data-dir '$R' log append --expect-seq $seq '$A'"
	check "full disk: the failure names the cause" grep -q "No space left on device" <<<"$ERR"
	after=$("$CAIRN" --data-dir "$R" log cat "$A")
	check "full disk: the failed append lost nothing and left nothing" test "$after" = "$before"
	expect_code 0 "full disk: the log is not torn" "$CAIRN" --data-dir "$R" inspect --json "$A"
	check "full disk: inspect says ok" grep -q '"status":"ok"' <<<"$OUT"
	free_kib 1 16
	ok=0
	for i in 1 2 3 4 5; do append "$A" "after 16 KiB $i" && ok=$((ok + 1)); done
	check "16 KiB freed: 5 of 5 small appends succeed ($ok)" test "$ok" -eq 5
	rm -f "$M/filler.1"

	# --- a full disk while the WAL holds pages it cannot copy back ---
	pin
	more=()
	for i in $(seq 13 24); do more+=("$(new_session "$i")"); done
	wal1=$(stat -c %s "$R/index.db-wal")
	check "a reader kept new pages in the WAL ($wal1 bytes)" test "$wal1" -gt 100000
	fill 2
	unpin # its close cannot copy them back: no room
	check "the WAL is still there" test -s "$R/index.db-wal"
	B=${more[0]}
	read_only_commands "full disk, WAL left" "$B"
	for i in $(seq 1 200); do append "$B" "filler $i" || break; done
	db1=$(stat -c %s "$R/index.db")
	if append "$B" "filler $i$LONGER"; then not_ok "full disk, WAL left: an append fails"; else ok "full disk, WAL left: an append fails"; fi
	free_kib 2 16
	# Commands that only read, run first, take none of it either.
	"$CAIRN" --data-dir "$R" sessions >/dev/null 2>&1
	"$CAIRN" --data-dir "$R" doctor >/dev/null 2>&1
	ok=0
	for i in 1 2 3 4 5; do append "$B" "after 16 KiB $i" && ok=$((ok + 1)); done
	check "16 KiB freed, WAL left: 5 of 5 small appends succeed ($ok)" test "$ok" -eq 5
	check "no checkpoint took the freed space: index.db stayed at $db1 bytes" \
		test "$(stat -c %s "$R/index.db")" -eq "$db1"
	for i in $(seq 1 200); do append "$B" "filler $i" || break; done
	free_kib 2 64
	ok=0
	for i in 1 2 3 4 5; do append "$B" "after 64 KiB $i" && ok=$((ok + 1)); done
	check "64 KiB freed, WAL left: 5 of 5 small appends succeed ($ok)" test "$ok" -eq 5

	# --- room again: the catalog catches up, the WAL is cut back ---
	rm -f "$M/filler.2"
	n_b=$("$CAIRN" --data-dir "$R" log cat "$B" | wc -l)
	expect_code 0 "room again: sessions" "$CAIRN" --data-dir "$R" sessions --json
	check "room again: the catalog caught up with every append ($n_b events)" python3 -c \
		'import json,sys; sys.exit(0 if any(s["id"] == sys.argv[2] and s["next_seq"] == int(sys.argv[3]) for s in json.loads(sys.argv[1])) else 1)' \
		"$OUT" "$B" "$n_b"
	check "room again: no WAL is left behind" test ! -s "$R/index.db-wal"
	expect_code 0 "room again: doctor" "$CAIRN" --data-dir "$R" doctor
	check "room again: doctor has nothing to note" bash -c '! grep -q behind <<<"$1"' _ "$OUT"

	# --- a read-only root: first without -wal and -shm, then with them ---
	read_only_root "$A"
	watermark_unreadable
	no_catalog "$A"
else
	echo "# mount not permitted ($(head -1 "$T/mount.err")): no full file system can be made here"
	mkdir -m 700 "$R"
	A=$(new_session 1)
	check "a session was created" test -n "$A"
	read_only_root "$A"
	watermark_unreadable
	no_catalog "$A"
fi
finish
