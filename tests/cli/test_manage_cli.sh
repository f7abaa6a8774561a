#!/usr/bin/env bash
# test_manage_cli.sh — user choices about sessions from the command line:
# rename, pin, unpin (catalog and session/meta events), rm, restore, purge
# (the trash on disk, confirmation on a terminal), the writer lock held by
# another process; `doctor` (every problem with its class, the exit code of
# the most severe, --json, --reindex equivalence, a garbage index) and the
# catalog files' modes under umask 000.
# Needs python3, zstd, flock(1) and script(1).
source "$(dirname "$0")/lib.sh"

# --- helpers -------------------------------------------------------------

# pyj EXPR [ARG...]: the python EXPR over v = the JSON in $OUT, A = the ARGs;
# S(id): a session of a listing, P(cls): (session, class) of doctor's problems.
pyj() {
	python3 -c 'import json,sys
A=sys.argv[2:]; v=json.load(sys.stdin)
def S(i): return [s for s in v if s["id"]==i][0]
def ids(): return [s["id"] for s in v]
sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"
}
# last_meta ID: the data of the last event of ID's log if it is session/meta.
last_meta() { "$CAIRN" log cat "$1" | python3 -c 'import json,sys; e=json.loads(sys.stdin.read().splitlines()[-1]); print(json.dumps(e["data"],sort_keys=True) if e["type"]=="session/meta" else "none")'; }
live() { local m=("$CAIRN_HOME"/sessions/*/"$1"); [ -d "${m[0]}" ] && echo "${m[0]}"; }
trashed() { local m=("$CAIRN_HOME"/trash/*/"$1"); [ -d "${m[0]}" ] && echo "${m[0]}"; }
flip() { python3 -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^0xff]))' "$1" "$2"; }
mode() { stat -c %a "$1"; }
# new VAR PROMPT: a session with one finished turn; VAR = its id.
new() {
	sleep 0.01
	local out
	out=$(printf '%s\n' '{"type":"turn/start","turn":"t1","data":{}}' \
		"{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"$2\"}}" \
		'{"type":"assistant/text","turn":"t1","data":{"text":"sure"}}' \
		'{"type":"turn/end","turn":"t1","data":{"outcome":"completed"}}' |
		"$CAIRN" log append --new --cwd "$T/proj")
	[ -n "$out" ] || not_ok "create session $1" "log append failed"
	printf -v "$1" '%s' "${out%% *}"
}
export -f last_meta live trashed
list() { expect_code 0 "sessions --json $*" "$CAIRN" sessions --json "$@"; }
# hold LOCKFILE / release: another process holds a session lock.
hold() {
	rm -f "$T/release"
	mkfifo "$T/release"
	flock -w 10 "$1" cat "$T/release" >/dev/null &
	holder=$!
	for _ in $(seq 500); do flock -n "$1" true || break; sleep 0.01; done
	check "another process holds $(basename "$(dirname "$1")")/session.lock" bash -c '! flock -n "$1" true' _ "$1"
}
release() { : >"$T/release"; wait "$holder"; }
mkdir -p "$T/proj"

# --- rename, pin, unpin ----------------------------------------------------------

new A "alpha prompt"
new B "bravo prompt"
expect_code 0 "rename by a prefix" "$CAIRN" rename "${A:0:20}" "Hello there"
check "... says which session was updated" test "$OUT" = "updated $A"
list
check "... the new title is listed" pyj 'S(A[0])["title"]=="Hello there"' "$A"
check "... and is a session/meta event in the log" test "$(last_meta "$A")" = '{"title": "Hello there"}'
expect_code 0 "rename to \"\"" "$CAIRN" rename "$A" ""
list
check "... goes back to the title of the first prompt" pyj 'S(A[0])["title"]=="alpha prompt"' "$A"
check "... as a session/meta event with title null" test "$(last_meta "$A")" = '{"title": null}'
expect_code 0 "pin two sessions" "$CAIRN" pin "$A" "$B"
list
check "... both pinned" pyj 'S(A[0])["pinned"] is True and S(A[1])["pinned"] is True' "$A" "$B"
check "... with a session/meta event each" \
	bash -c '[ "$(last_meta "$1")" = "{\"pinned\": true}" ] && [ "$(last_meta "$2")" = "{\"pinned\": true}" ]' _ "$A" "$B"
new C "charlie prompt"
list
check "... pinned sessions come before a newer one" pyj 'ids()[2]==A[0]' "$C"
expect_code 0 "unpin" "$CAIRN" unpin "$B"
list
check "... not pinned any more" pyj 'S(A[0])["pinned"] is False and S(A[1])["pinned"] is True' "$B" "$A"
check "... a session/meta event pinned false" test "$(last_meta "$B")" = '{"pinned": false}'
expect_code 2 "rename without a title" "$CAIRN" rename "$A"
expect_code 3 "rename of no such session" "$CAIRN" rename ZZZZZZZZZZ x
expect_code 2 "pin without an id" "$CAIRN" pin
expect_code 3 "pin of no such session" "$CAIRN" pin ZZZZZZZZZZ

# --- rm and restore ------------------------------------------------------------------

cdir=$(live "$C")
key=$(basename "$(dirname "$cdir")")
cp "$cdir/session.jsonl.zst" "$T/c.zst"
expect_code 0 "rm" "$CAIRN" rm "$C"
check "... moves sessions/<key>/<id> to trash/<key>/<id>, lock included" \
	bash -c '[ ! -e "$1" ] && [ -f "$2/session.jsonl.zst" ] && [ -f "$2/session.lock" ]' _ "$cdir" "$CAIRN_HOME/trash/$key/$C"
check "... the log unchanged" cmp -s "$T/c.zst" "$CAIRN_HOME/trash/$key/$C/session.jsonl.zst"
list
check "... not listed" pyj 'A[0] not in ids()' "$C"
list --all
check "... listed with --all, deleted_at set" pyj 'S(A[0])["deleted_at"]>0' "$C"
list --trash
check "... and with --trash, alone" pyj 'ids()==[A[0]]' "$C"
expect_code 3 "rm of a trashed session exits 3" "$CAIRN" rm "$C"
expect_code 0 "restore" "$CAIRN" restore "${C:0:20}"
check "... moves it back, lock included" \
	bash -c '[ -f "$1/session.jsonl.zst" ] && [ -f "$1/session.lock" ] && [ ! -e "$2" ]' _ "$cdir" "$CAIRN_HOME/trash/$key/$C"
list
check "... listed again, deleted_at null" pyj 'S(A[0])["deleted_at"] is None' "$C"
expect_code 3 "restore of a live session exits 3" "$CAIRN" restore "$C"

new D "delta prompt"
new E "echo prompt"
expect_code 0 "rm of several ids" "$CAIRN" rm "$D" "${E:0:20}"
check "... moves them all" bash -c '[ -n "$(trashed "$1")" ] && [ -n "$(trashed "$2")" ] && [ -z "$(live "$1")$(live "$2")" ]' _ "$D" "$E"
list --trash
check "... all in the trash" pyj 'sorted(ids())==sorted(A)' "$D" "$E"
expect_code 0 "restore of several ids" "$CAIRN" restore "$D" "$E"
check "... both back" bash -c '[ -n "$(live "$1")" ] && [ -n "$(live "$2")" ]' _ "$D" "$E"

# restore refused while a live session has the id.
new F "foxtrot prompt"
expect_code 0 "rm F" "$CAIRN" rm "$F"
cp -a "$(trashed "$F")" "$CAIRN_HOME/sessions/$key/$F"
expect_code 6 "restore while a live session has the id is refused" "$CAIRN" restore "$F"
check "... naming it" grep -q "$F" <<<"$ERR"
check "... both copies kept" bash -c '[ -f "$1/session.jsonl.zst" ] && [ -f "$2/session.jsonl.zst" ]' _ "$(live "$F")" "$(trashed "$F")"
expect_code 0 "purge of that id removes only the trashed copy" "$CAIRN" purge --yes "$F" </dev/null
check "... the live one stays" bash -c '[ -f "$1/session.jsonl.zst" ] && [ -z "$(trashed "$2")" ]' _ "$(live "$F")" "$F"

# --- purge -------------------------------------------------------------------------

expect_code 3 "purge of a live session exits 3" "$CAIRN" purge "$A" </dev/null
check "... and leaves it" test -n "$(live "$A")"
new G "golf prompt"
"$CAIRN" rm "$G" >/dev/null
gdir=$(trashed "$G")
expect_code 0 "purge without a terminal needs no confirmation" "$CAIRN" purge "$G" </dev/null
check "... the directory is gone, lock file included" test ! -e "$gdir"
check "... asked nothing" bash -c '! grep -q "y/N" <<<"$1$2"' _ "$OUT" "$ERR"
list --all
check "... and it is not listed any more" pyj 'A[0] not in ids()' "$G"
expect_code 3 "purge of a purged session exits 3" "$CAIRN" purge "$G" </dev/null

new H "hotel prompt"
"$CAIRN" rm "$H" >/dev/null
OUT=$(printf 'n\n' | script -qec "\"$CAIRN\" purge $H" /dev/null 2>&1)
check "purge on a terminal asks" grep -q 'y/N' <<<"$OUT"
check "... answered n: nothing purged" bash -c 'grep -q "nothing purged" <<<"$1" && [ -f "$2/session.jsonl.zst" ]' _ "$OUT" "$(trashed "$H")"
OUT=$(printf 'y\n' | script -qec "\"$CAIRN\" purge $H" /dev/null 2>&1)
check "... answered y: purged" bash -c 'grep -q "purged $2" <<<"$1" && [ -z "$(trashed "$2")" ]' _ "$OUT" "$H"
new I "india prompt"
"$CAIRN" rm "$I" >/dev/null
OUT=$(printf 'n\n' | script -qec "\"$CAIRN\" purge --yes $I" /dev/null 2>&1)
check "purge --yes on a terminal asks nothing and purges" bash -c '! grep -q "y/N" <<<"$1" && [ -z "$(trashed "$2")" ]' _ "$OUT" "$I"

new J "juliet prompt"
new K "kilo prompt"
"$CAIRN" rm "$J" "$K" >/dev/null
OUT=$(printf 'n\n' | script -qec "\"$CAIRN\" purge --all" /dev/null 2>&1)
check "purge --all on a terminal asks; n keeps the trash" bash -c 'grep -q "y/N" <<<"$1" && [ -n "$(trashed "$2")" ]' _ "$OUT" "$J"
expect_code 0 "purge --all" "$CAIRN" purge --all </dev/null
check "... every trashed session is gone" bash -c '[ -z "$(find "$1/trash" -name session.jsonl.zst -o -name session.lock)" ]' _ "$CAIRN_HOME"
list --trash
check "... the trash lists nothing" pyj 'v==[]'
expect_code 0 "purge --all of an empty trash" "$CAIRN" purge --all </dev/null
check "... says so" grep -q "empty" <<<"$OUT"
expect_code 2 "purge without ids" "$CAIRN" purge </dev/null
expect_code 2 "purge with ids and --all" "$CAIRN" purge --all "$A" </dev/null

# --- the lock held by another process ---------------------------------------------------

new L "lima prompt"
new M "mike prompt"
hold "$(live "$L")/session.lock"
for cmd in rm rename pin unpin; do
	args=("$L")
	[ $cmd = rename ] && args+=("new name")
	expect_code 7 "$cmd of a session locked elsewhere exits 7" timeout 20 "$CAIRN" $cmd "${args[@]}"
	check "... the message names the session" grep -q "$L" <<<"$ERR"
done
check "... it stayed live with no session/meta event" bash -c '[ -n "$(live "$1")" ] && [ "$(last_meta "$1")" = none ]' _ "$L"
expect_code 7 "rm of a free and a locked session exits 7" timeout 20 "$CAIRN" rm "$M" "$L"
check "... the free one went to the trash, the locked one stayed" bash -c '[ -n "$(trashed "$1")" ] && [ -n "$(live "$2")" ]' _ "$M" "$L"
release
expect_code 0 "after the holder exits, rm works" "$CAIRN" rm "$L"
hold "$(trashed "$L")/session.lock"
expect_code 7 "purge of a trashed session locked elsewhere exits 7" timeout 20 "$CAIRN" purge --yes "$L"
check "... and keeps it" test -n "$(trashed "$L")"
expect_code 7 "restore of a trashed session locked elsewhere exits 7" timeout 20 "$CAIRN" restore "$L"
release
expect_code 0 "after the holder exits, restore works" "$CAIRN" restore "$L" "$M"

# --- doctor: healthy, --reindex, a garbage index ------------------------------------------

expect_code 0 "doctor of a healthy root exits 0" "$CAIRN" doctor
check "... integrity_check ok, no problems" bash -c 'grep -q "integrity_check ok" <<<"$1" && grep -q " 0 problems" <<<"$1"' _ "$OUT"
expect_code 0 "doctor --json" "$CAIRN" doctor --json
check "... one object: problems [], notes [], integrity_check ok" \
	pyj 'isinstance(v,dict) and v["problems"]==[] and isinstance(v["notes"],list) and v["integrity_check"]=="ok"'

new N "november prompt"
"$CAIRN" rename "$N" "Trashed title" >/dev/null && "$CAIRN" pin "$N" >/dev/null && "$CAIRN" rm "$N" >/dev/null
"$CAIRN" rename "$B" "Bravo explicit" >/dev/null
list --all
BEFORE=$OUT
check "the listing to rebuild has explicit titles, pins and a trashed session" \
	pyj 'S(A[0])["title"]=="Trashed title" and S(A[0])["pinned"] and S(A[0])["deleted_at"]>0 and S(A[1])["title"]=="Bravo explicit" and S(A[2])["pinned"]' "$N" "$B" "$A"
same() { python3 -c 'import json,sys
try: sys.exit(0 if json.loads(sys.argv[1])==json.loads(sys.argv[2]) else 1)
except ValueError: sys.exit(1)' "$1" "$2"; }
rm -f "$CAIRN_HOME"/index.db "$CAIRN_HOME"/index.db-wal "$CAIRN_HOME"/index.db-shm
expect_code 0 "doctor --reindex without an index" "$CAIRN" doctor --reindex
check "... says it rebuilt it" grep -q "rebuilt" <<<"$OUT"
list --all
check "... sessions --json --all equals the listing before, every field" same "$BEFORE" "$OUT"
expect_code 0 "doctor --reindex --json over an existing index" "$CAIRN" doctor --reindex --json
check "... reindexed, integrity ok" pyj 'v["reindexed"] is True and v["integrity_check"]=="ok" and v["problems"]==[]'
list --all
check "... the same listing again" same "$BEFORE" "$OUT"

head -c 16384 /dev/urandom >"$CAIRN_HOME/index.db"
rm -f "$CAIRN_HOME"/index.db-wal "$CAIRN_HOME"/index.db-shm
expect_code 1 "doctor with a garbage index.db reports it (io)" "$CAIRN" doctor --json
check "... as a problem of the index" pyj 'any(p["session"] is None and p["message"] for p in v["problems"])'
OUT=$("$CAIRN" doctor --reindex 2>&1)
check "doctor --reindex rebuilds a garbage index.db" grep -q "rebuilt from" <<<"$OUT"
expect_code 0 "... after which doctor finds nothing wrong" "$CAIRN" doctor
list --all
check "... the same listing as before" same "$BEFORE" "$OUT"
# (Whatever happened, go on with a sound index.)
rm -f "$CAIRN_HOME"/index.db "$CAIRN_HOME"/index.db-wal "$CAIRN_HOME"/index.db-shm
"$CAIRN" doctor --reindex >/dev/null

# --- modes under umask 000 ----------------------------------------------------------------

chmod 644 "$CAIRN_HOME/index.db"
(umask 000 && "$CAIRN" sessions >/dev/null)
check "a 0644 index.db is 0600 again after a command under umask 000" test "$(mode "$CAIRN_HOME/index.db")" = 600
U=$T/um
(umask 000 && CAIRN_HOME=$U "$CAIRN" log append --new --no-cwd <<<'{"type":"user/message","data":{"text":"hi"}}' >/dev/null)
check "a new root under umask 000: index.db 0600" test "$(mode "$U/index.db")" = 600
# A reader holding SQLite's shared lock keeps -wal and -shm after cairn exits.
python3 -c 'import fcntl,os,sys,time
fd=os.open(sys.argv[1]+"/index.db",os.O_RDWR); fcntl.lockf(fd,fcntl.LOCK_SH,510,0x40000002)
open(sys.argv[1]+"/held","w").close()
for _ in range(400):
    if os.path.exists(sys.argv[1]+"/done"): break
    time.sleep(0.05)' "$U" &
reader=$!
for _ in $(seq 200); do [ -e "$U/held" ] && break; sleep 0.05; done
id=$(ls "$U/sessions/_no-cwd")
(umask 000 && CAIRN_HOME=$U "$CAIRN" rename "$id" "t" >/dev/null)
check "... index.db, index.db-wal, index.db-shm 0600" \
	test "$(mode "$U/index.db") $(mode "$U/index.db-wal") $(mode "$U/index.db-shm")" = "600 600 600"
chmod 666 "$U/index.db-wal" "$U/index.db-shm"
(umask 000 && CAIRN_HOME=$U "$CAIRN" pin "$id" >/dev/null)
check "... -wal and -shm of 0666 left by others are 0600 after a command" \
	test "$(mode "$U/index.db-wal") $(mode "$U/index.db-shm")" = "600 600"
touch "$U/done"
wait "$reader"

# --- doctor: every problem, the most severe class ------------------------------------------

new X1 "to be corrupted"
new X2 "to be torn"
new X3 "to be cut below its watermark"
XU=01J0000000000000000000FMT2
mkdir -p "$CAIRN_HOME/sessions/crafted/$XU" "$CAIRN_HOME/sessions/crafted/01J0000000000000000000TORN"
echo "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":2,\"id\":\"$XU\",\"created_at\":1,\"cwd\":null}}" >"$T/v2.txt"
zstd -q -c --check "$T/v2.txt" >"$CAIRN_HOME/sessions/crafted/$XU/session.jsonl.zst"
XT=01J0000000000000000000TORN
for l in "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":1,\"id\":\"$XT\",\"created_at\":1,\"cwd\":null}}" \
	'{"seq":1,"t":2,"type":"user/message","data":{"text":"crafted"}}'; do
	echo "$l" >"$T/l.txt"
	zstd -q -c --check "$T/l.txt" >>"$CAIRN_HOME/sessions/crafted/$XT/session.jsonl.zst"
done
truncate -s -3 "$CAIRN_HOME/sessions/crafted/$XT/session.jsonl.zst"
flip "$(live "$X1")/session.jsonl.zst" 20
printf '\0\0\0garbage' >>"$(live "$X2")/session.jsonl.zst"
truncate -s -3 "$(live "$X3")/session.jsonl.zst"
expect_code 4 "doctor with corrupt, unsupported and torn logs exits 4 (corrupt outranks unsupported)" "$CAIRN" doctor --json
check "... one object with problems, notes and integrity_check" pyj 'isinstance(v,dict) and "problems" in v and "notes" in v and v["integrity_check"]=="ok"'
check "... every problem: the flipped log corrupt, the cut one corrupt, format 2 unsupported" \
	pyj 'sorted((p["session"],p["class"]) for p in v["problems"])==sorted([(A[0],"corrupt"),(A[1],"corrupt"),(A[2],"unsupported")]) and all(p["message"] for p in v["problems"])' "$X1" "$X3" "$XU"
check "... garbage above the watermark and a crafted log cut short are torn notes" \
	pyj '{n["session"] for n in v["notes"] if n["note"]=="torn"}=={A[0],A[1]}' "$X2" "$XT"
expect_code 4 "doctor (text)" "$CAIRN" doctor
check "... a line per problem and note: session, class, message" \
	bash -c 'grep -q "^$1: corrupt: ." <<<"$5" && grep -q "^$2: corrupt: ." <<<"$5" && grep -q "^$3: unsupported: ." <<<"$5" && grep -q "^$4: torn: ." <<<"$5"' _ "$X1" "$X3" "$XU" "$X2" "$OUT"
mkdir -p "$T/aside"
mv "$(live "$X1")" "$(live "$X3")" "$T/aside/"
expect_code 5 "without the corrupt logs doctor exits 5 (unsupported)" "$CAIRN" doctor
mv "$CAIRN_HOME/sessions/crafted/$XU" "$T/aside/"
expect_code 0 "with only torn logs doctor exits 0" "$CAIRN" doctor

finish
