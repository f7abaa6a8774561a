#!/usr/bin/env bash
# test_catalog_behind.sh — a write that is durable while the catalog
# cannot be updated: every writing command (log append, rename, pin,
# unpin, rm, restore, repair, repair --salvage) exits 0, says "warning:
# saved; the catalog is behind" on stderr and "catalog": "behind" in
# --json, with the catalog's writes aborted by a trigger, index.db held
# by another process's write transaction, or index.db not a database.
# Then the watermark that stayed behind heals: inspect and doctor report
# it, and the next command that holds the session's writer lock (repair,
# log append, doctor, the FIFO's rename) syncs the log and raises it, also
# after appends raced `doctor --reindex` and on a full file system.
# Needs python3 (its sqlite3 module).
source "$(dirname "$0")/lib.sh"

DB="$CAIRN_HOME/index.db"
MSG='{"type":"user/message","data":{"text":"hello"}}'
TORN_CALL='{"type":"turn/start","turn":"t1"}
{"type":"tool/call","turn":"t1","data":{"call_id":"c1","name":"sh","args":{}}}'

# sql STATEMENTS: run them on the catalog with Python's SQLite.
sql() { python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.executescript(sys.argv[2]); d.commit()' "$DB" "$1"; }
block() {
	sql "CREATE TRIGGER boom_u BEFORE UPDATE ON sessions BEGIN SELECT RAISE(ABORT, 'injected'); END;
	     CREATE TRIGGER boom_i BEFORE INSERT ON sessions BEGIN SELECT RAISE(ABORT, 'injected'); END;"
}
unblock() { sql "DROP TRIGGER IF EXISTS boom_u; DROP TRIGGER IF EXISTS boom_i;"; }
# new: a session with one event; prints its id.
new() { "$CAIRN" log append --new --no-cwd <<<"$MSG" 2>/dev/null | cut -d" " -f1; }
next_of() { "$CAIRN" inspect --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["next_seq"])'; }
# wm ID: the watermark state and bytes inspect reports, and the file size.
wm() { "$CAIRN" inspect --json "$1" | python3 -c 'import json,sys; v=json.load(sys.stdin); w=v["watermark"]; print(w["state"], w["bytes"], v["file_bytes"])'; }
# behind DESC CODE_JSON CMD...: exit 0, the warning, and for --json the field.
behind() {
	local desc=$1 want_json=$2
	shift 2
	expect_code 0 "$desc: exit 0" "$@"
	check "$desc: warns the catalog is behind" grep -q 'warning: saved; the catalog is behind' <<<"$ERR"
	if [ "$want_json" = json ]; then
		check "$desc: --json says catalog behind" grep -q '"catalog":"behind"' <<<"$OUT"
	fi
}

# --- every writing command, the catalog's writes aborted ----------------
a=$(new) b=$(new) c=$(new)
expect_code 0 "a normal append says the catalog is current" \
	"$CAIRN" log append "$a" --expect-seq 2 --json <<<"$MSG"
check "  --json: catalog current" grep -q '"catalog":"current"' <<<"$OUT"
block
behind "log append" json "$CAIRN" log append "$a" --expect-seq 3 --json <<<"$MSG"
check "log append: the event is in the log" [ "$(next_of "$a")" = 4 ]
behind "log append (text)" text "$CAIRN" log append "$a" --expect-seq 4 <<<"$MSG"
check "log append (text): prints the id and next seq" [ "$OUT" = "$a 5" ]
behind "rename" text "$CAIRN" rename "$b" "a title"
check "rename: the event is in the log" [ "$(next_of "$b")" = 3 ]
behind "pin" text "$CAIRN" pin "$b"
behind "unpin" text "$CAIRN" unpin "$b"
check "pin, unpin: both events are in the log" [ "$(next_of "$b")" = 5 ]
behind "rm" text "$CAIRN" rm "$c"
check "rm: moved to the trash" [ -d "$(echo "$CAIRN_HOME"/trash/*/"$c")" ]
behind "restore" text "$CAIRN" restore "$c"
check "restore: back" [ -d "$(echo "$CAIRN_HOME"/sessions/*/"$c")" ]
d=$(new)
"$CAIRN" log append "$d" --expect-seq 2 <<<"$TORN_CALL" >/dev/null 2>&1
behind "repair" json "$CAIRN" repair --json "$d"
check "repair: the closers are in the log" [ "$(next_of "$d")" = 6 ]
e=$(new)
f=$(ls "$CAIRN_HOME"/sessions/*/"$e"/session.jsonl.zst)
"$CAIRN" log append "$e" --expect-seq 2 <<<"$MSG" >/dev/null 2>&1
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(-3,2); b=f.read(1); f.seek(-3,2); f.write(bytes([b[0]^0xff]))' "$f"
behind "repair --salvage" json "$CAIRN" repair --salvage --json "$e"
unblock
rm -rf "$(dirname "$f")" # the damaged original: doctor below reports what it heals

# The FIFO's commands take the catalog's write lock before they write
# anything: with a catalog they cannot write to at all they fail with
# nothing written (a retry is safe), as tested in test_fifo_catalog_faults.

# --- the catalog held by another process's write transaction ------------
python3 -c 'import sqlite3,sys,time; d=sqlite3.connect(sys.argv[1], isolation_level=None); d.execute("BEGIN IMMEDIATE"); print("held", flush=True); time.sleep(30)' "$DB" >"$T/held" &
holder=$!
for ((i = 0; i < 200; i++)); do grep -q held "$T/held" 2>/dev/null && break; sleep 0.02; done
behind "log append, the catalog held by a writer" json "$CAIRN" log append "$a" --expect-seq 5 --json <<<"$MSG"
kill "$holder"
wait "$holder" 2>/dev/null

# --- index.db not a database --------------------------------------------
cp "$DB" "$T/index.good"
rm -f "$DB-wal" "$DB-shm"
head -c 8192 /dev/urandom >"$DB"
behind "log append, index.db not a database" json "$CAIRN" log append "$a" --expect-seq 6 --json <<<"$MSG"
expect_code 1 "pin, index.db not a database: refused before writing" "$CAIRN" pin "$b"
check "  nothing was written" [ "$(next_of "$b")" = 5 ]

# --- healing ------------------------------------------------------------
# The damaged index is rebuilt; the watermarks it held cannot be read, so
# they are missing until a writer of each session raises them: doctor
# does for every session whose lock it can take.
expect_code 0 "doctor --reindex rebuilds the damaged index" "$CAIRN" doctor --reindex --json
check "  and raises the missing watermarks (notes)" grep -q '"note":"watermark"' <<<"$OUT"
read -r st bytes size <<<"$(wm "$a")"
check "  the watermark of $a is current ($st $bytes of $size)" [ "$st" = current ] && [ "$bytes" = "$size" ]

# heal_case DESC CMD...: a session whose last append left the catalog
# behind; inspect and doctor report it lagging; CMD (holding the writer
# lock) raises it to the whole file.
heal_case() {
	local desc=$1
	shift
	s=$(new)
	block
	"$CAIRN" log append "$s" --expect-seq 2 <<<"$MSG" >/dev/null 2>&1
	unblock
	read -r st bytes size <<<"$(wm "$s")"
	check "$desc: inspect --json reports the watermark lagging ($st $bytes of $size)" \
		[ "$st" = lagging ] && [ "$bytes" -lt "$size" ]
	check "$desc: inspect says so" grep -q "^watermark: $bytes bytes (lagging" <<<"$("$CAIRN" inspect "$s")"
	local cmd=("$@")
	cmd=("${cmd[@]//@ID@/$s}")
	"${cmd[@]}" >"$T/heal.out" 2>"$T/heal.err" <<<""
	read -r st bytes size <<<"$(wm "$s")"
	check "$desc: raises it to the whole log ($st $bytes of $size)" \
		[ "$st" = current ] && [ "$bytes" = "$size" ] || cat "$T/heal.err"
}
heal_case "repair with nothing to repair" "$CAIRN" repair @ID@
heal_case "log append of an empty batch" "$CAIRN" log append @ID@ --expect-seq 3
heal_case "rename (the FIFO opens the log)" "$CAIRN" rename @ID@ "healed"
heal_case "doctor" "$CAIRN" doctor
check "doctor (text) says it raised the watermark" grep -q "^$s: watermark: raised from [0-9]* bytes to $size bytes" "$T/heal.out"
s=$(new)
block
"$CAIRN" log append "$s" --expect-seq 2 <<<"$MSG" >/dev/null 2>&1
unblock
expect_code 0 "doctor --json reports what it did to a lagging watermark" "$CAIRN" doctor --json
check "  a watermark note for $s" python3 -c 'import json,sys; v=json.loads(sys.argv[1]); sys.exit(0 if any(n["session"]==sys.argv[2] and n["note"]=="watermark" and "raised" in n["message"] for n in v["notes"]) else 1)' "$OUT" "$s"
# A plain reader never raises it (what it sees may be only in memory).
s=$(new)
block
"$CAIRN" log append "$s" --expect-seq 2 <<<"$MSG" >/dev/null 2>&1
unblock
"$CAIRN" log cat "$s" >/dev/null
"$CAIRN" inspect "$s" >/dev/null
"$CAIRN" sessions >/dev/null
read -r st bytes size <<<"$(wm "$s")"
check "readers (log cat, inspect, sessions) leave a lagging watermark alone ($st)" [ "$st" = lagging ]
# A held lock: doctor reports it lagging and leaves it.
flock "$(dirname "$(ls "$CAIRN_HOME"/sessions/*/"$s"/session.jsonl.zst)")/session.lock" \
	"$CAIRN" doctor --json >"$T/doc.out" 2>&1
check "doctor with the session's lock held elsewhere reports the watermark lagging" \
	grep -q "\"session\":\"$s\",\"note\":\"watermark lags\"" "$T/doc.out"

# --- appends racing doctor --reindex ------------------------------------
r=$(new)
( for ((i = 0; i < 15; i++)); do "$CAIRN" doctor --reindex >/dev/null 2>&1; done ) &
racer=$!
# doctor takes a session's writer lock for a moment when it raises a
# watermark: an append meanwhile is refused (locked, nothing written) and
# tried again, as with any other writer.
n=2 behind_n=0 locked_n=0 bad=''
for ((i = 0; i < 40; i++)); do
	for ((try = 0; try < 50; try++)); do
		out=$("$CAIRN" log append "$r" --expect-seq "$n" --json <<<"$MSG" 2>"$T/race.err")
		rc=$?
		[ "$rc" -eq 7 ] || break
		locked_n=$((locked_n + 1))
	done
	[ "$rc" -eq 0 ] || { bad="exit $rc: $(cat "$T/race.err")"; break; }
	n=$((n + 1))
	grep -q '"catalog":"behind"' <<<"$out" && behind_n=$((behind_n + 1))
done
wait "$racer"
check "40 appends racing doctor --reindex all durable ($behind_n with the catalog behind, $locked_n tried again) $bad" [ "$n" = 42 ]
"$CAIRN" repair "$r" >/dev/null 2>&1
read -r st bytes size <<<"$(wm "$r")"
check "  the next repair leaves the watermark current ($st $bytes of $size)" [ "$st" = current ] && [ "$bytes" = "$size" ]

# --- a full file system -------------------------------------------------
# The log's last page has room for one more small frame while the
# catalog's WAL cannot grow: the append is durable, the catalog behind;
# once space is freed the next writer raises the watermark.
F="$T/full"
mkdir -p "$F"
if mount -t tmpfs -o size=2m tmpfs "$F" 2>/dev/null; then
	trap 'umount "$F" 2>/dev/null; rm -rf "$T"' EXIT
	fid=$("$CAIRN" --data-dir "$F/root" log append --new --no-cwd <<<"$MSG" | cut -d' ' -f1)
	dd if=/dev/zero of="$F/filler" bs=4k 2>/dev/null
	expect_code 0 "full file system: log append is durable" \
		"$CAIRN" --data-dir "$F/root" log append "$fid" --expect-seq 2 --json <<<"$MSG"
	check "  the catalog is behind (no room for its WAL)" grep -q '"catalog":"behind"' <<<"$OUT"
	check "  the event is in the log" [ "$("$CAIRN" --data-dir "$F/root" inspect --json "$fid" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["next_seq"])')" = 3 ]
	rm -f "$F/filler"
	"$CAIRN" --data-dir "$F/root" repair "$fid" >/dev/null 2>&1
	read -r st bytes size <<<"$(CAIRN_HOME="$F/root" wm "$fid")"
	check "  space freed: the next repair raises the watermark ($st $bytes of $size)" \
		[ "$st" = current ] && [ "$bytes" = "$size" ]
	umount "$F"
else
	ok "# SKIP a full file system: mount is not permitted here"
fi
finish
