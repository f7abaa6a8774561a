#!/usr/bin/env bash
# test_doctor_store.sh — what `doctor` finds in the session folders beyond
# one log at a time: a session moved by rm/restore while doctor runs is
# found again, never reported missing; one id under two project folders
# (log cat names both, doctor says which to keep); a symlink, a foreign
# owner or a wrong file type where a session file belongs is `corrupt`
# everywhere; leftovers of interrupted creations (staging files, folders
# without a log) are reported, never listed, and removed by --fix without
# ever disturbing a creation in progress.
# Needs python3 and flock(1).
source "$(dirname "$0")/lib.sh"

pyj() {
	python3 -c 'import json,sys
A=sys.argv[2:]; v=json.load(sys.stdin)
def P(cls): return [p for p in v["problems"] if p["class"]==cls]
def N(what): return [n for n in v["notes"] if n["note"]==what]
sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"
}
MSG='{"type":"user/message","turn":"t1","data":{"text":"hello"}}'
# new VAR [CWD]: a session with one event; VAR = its id.
new() {
	local out
	out=$("$CAIRN" log append --new --cwd "${2:-$T/proj}" <<<"$MSG")
	[ -n "$out" ] || not_ok "create session $1" "log append failed"
	printf -v "$1" '%s' "${out%% *}"
}
live() { local m=("$CAIRN_HOME"/sessions/*/"$1"); [ -d "${m[0]}" ] && echo "${m[0]}"; }

# --- a session moved while doctor runs ---------------------------------------
# Enough other sessions that doctor's pass over them takes a while after
# its listing.
for i in $(seq 1 40); do "$CAIRN" log append --new --cwd "$T/proj$((i % 4))" <<<"$MSG" >/dev/null; done
new moving
# rm/restore as fast as they go for a bounded count, doctor in a loop
# meanwhile (bounded in count and time); every doctor run must find both.
(
	for i in $(seq 1 100); do
		"$CAIRN" rm "$moving" >/dev/null 2>&1
		"$CAIRN" restore "$moving" >/dev/null 2>&1
	done
) &
mover=$!
runs=0 false_missing=0 other=0 deadline=$((SECONDS + 60))
while kill -0 "$mover" 2>/dev/null && [ "$runs" -lt 400 ] && [ "$SECONDS" -lt "$deadline" ]; do
	out=$("$CAIRN" doctor 2>&1)
	rc=$?
	runs=$((runs + 1))
	if [ "$rc" -eq 3 ] || grep -q ": missing:" <<<"$out"; then
		false_missing=$((false_missing + 1))
		[ "$false_missing" -eq 1 ] && echo "# first false missing: $out"
	elif [ "$rc" -ne 0 ]; then
		other=$((other + 1))
		[ "$other" -eq 1 ] && echo "# first other failure (exit $rc): $out"
	fi
done
wait "$mover"
echo "# $runs doctor runs during rm/restore: $false_missing missing, $other other failures"
check "doctor ran many times while the session moved ($runs runs)" test "$runs" -ge 10
check "doctor never reported the moving session missing" test "$false_missing" -eq 0
check "... nor failed otherwise" test "$other" -eq 0

# --- one id under two project folders --------------------------------------------
export CAIRN_HOME="$T/dup"
new dup "$T/a"
src=$(live "$dup")
cp -a "$src" "$T/early-copy" # a copy taken after one event
expect_code 0 "the original goes on: a second event" "$CAIRN" log append "$dup" --expect-seq 2 <<<"$MSG"
mkdir -m 700 "$CAIRN_HOME/sessions/-elsewhere"
mv "$T/early-copy" "$CAIRN_HOME/sessions/-elsewhere/$dup"
key=$(basename "$(dirname "$src")")
expect_code 4 "log cat of an id under two project folders fails closed (corrupt)" "$CAIRN" log cat "$dup"
check "... naming both folders" grep -q "sessions/-elsewhere/$dup" <<<"$ERR"
check "... the other one too" grep -q "sessions/$key/$dup" <<<"$ERR"
check "... and pointing at doctor" grep -q "cairn doctor" <<<"$ERR"
expect_code 4 "log cat by a prefix of that id fails the same way" "$CAIRN" log cat "${dup:0:20}"
check "... naming both folders" grep -q "sessions/-elsewhere/$dup.*sessions/$key/$dup" <<<"$ERR"
expect_code 4 "append to it fails closed too" "$CAIRN" log append "$dup" --expect-seq 3 <<<"$MSG"
expect_code 4 "repair of it fails closed" "$CAIRN" repair "$dup"
check "... without offering a salvage" test -z "$(grep salvage <<<"$ERR")"
expect_code 4 "doctor reports the two copies (corrupt)" "$CAIRN" doctor
check "... with both paths" grep -q "$dup: corrupt: in 2 project folders: sessions/-elsewhere/$dup (2 events.*sessions/$key/$dup (3 events" <<<"$OUT"
check "... keeping the one with more events, saying why" grep -q "keep sessions/$key/$dup (it holds the most events)" <<<"$OUT"
expect_code 4 "doctor --json" "$CAIRN" doctor --json
check "... one corrupt problem naming the copies and the one to keep" pyj 'len(P("corrupt"))==1 and P("corrupt")[0]["session"]==A[0] and P("corrupt")[0]["keep"]=="sessions/"+A[1]+"/"+A[0] and sorted(c["path"] for c in P("corrupt")[0]["copies"])==sorted(["sessions/-elsewhere/"+A[0], "sessions/"+A[1]+"/"+A[0]]) and [c["events"] for c in P("corrupt")[0]["copies"] if c["project_key"]=="-elsewhere"]==[2]' "$dup" "$key"
expect_code 0 "once the stale copy is moved out, log cat works" bash -c "mv '$CAIRN_HOME/sessions/-elsewhere/$dup' '$T/stale' && '$CAIRN' log cat '$dup' >/dev/null"
expect_code 0 "... and doctor is content" "$CAIRN" doctor
# A damaged copy loses to a valid one whatever its length.
cp -a "$CAIRN_HOME/sessions/$key/$dup" "$T/bad"
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(20); b=f.read(1); f.seek(20); f.write(bytes([b[0]^0xff]))' "$T/bad/session.jsonl.zst"
mkdir -m 700 "$CAIRN_HOME/sessions/-aaa"
mv "$T/bad" "$CAIRN_HOME/sessions/-aaa/$dup"
expect_code 4 "a damaged copy and a valid one" "$CAIRN" doctor --json
check "... the valid one is kept" pyj '[p["keep"] for p in P("corrupt") if "copies" in p]==["sessions/"+A[1]+"/"+A[0]]' "$dup" "$key"

# --- a symlink, a foreign owner or a wrong type where a session file belongs ---------
# One class everywhere: corrupt (the store is not as cairn made it; retrying
# cannot help; a human must look).
export CAIRN_HOME="$T/unsafe"
new victim
vf=$(live "$victim")/session.jsonl.zst
mv "$vf" "$T/real.zst"
ln -s "$T/real.zst" "$vf"
unsafe_everywhere() { # WHAT
	expect_code 0 "$1: sessions lists it" "$CAIRN" sessions --json
	check "... as corrupt" python3 -c 'import json,sys; v=json.load(sys.stdin); s=[s for s in v if s["id"]==sys.argv[1]]; sys.exit(0 if s and s[0]["status"]=="corrupt" else 1)' "$victim" <<<"$OUT"
	expect_code 4 "$1: doctor exits 4" "$CAIRN" doctor --json
	check "... reporting it as corrupt" pyj '[p["session"] for p in P("corrupt")]==[A[0]] and not P("io")' "$victim"
	expect_code 4 "$1: inspect exits 4" "$CAIRN" inspect --json "$victim"
	check "... status and class corrupt" python3 -c 'import json,sys; v=json.load(sys.stdin); sys.exit(0 if v["status"]=="corrupt" and v["error"]["class"]=="corrupt" else 1)' <<<"$OUT"
	expect_code 4 "$1: log cat exits 4" "$CAIRN" log cat "$victim"
	# A PATH is read as it is wherever it lies (any owner), but never
	# through a symlink nor as anything but a regular file.
	[ -L "$vf" ] || [ -d "$vf" ] && expect_code 4 "$1: inspect of its PATH exits 4" "$CAIRN" inspect "$vf"
	expect_code 4 "$1: append refuses it (4)" "$CAIRN" log append "$victim" --expect-seq 2 <<<"$MSG"
	expect_code 4 "$1: repair refuses it (4)" "$CAIRN" repair "$victim"
	check "... without offering a salvage (there are no frames to copy)" test -n "$ERR" -a -z "$(grep salvage <<<"$ERR")"
}
unsafe_everywhere "a symlinked log"
check "... the symlink's target is untouched" test "$(stat -c %s "$T/real.zst")" -gt 0
rm "$vf"
mkdir -m 700 "$vf"
unsafe_everywhere "a directory where the log belongs"
rmdir "$vf"
cp "$T/real.zst" "$vf"
chown 12345:12345 "$vf" 2>/dev/null && unsafe_everywhere "a log owned by another uid"
chown "$(id -u):$(id -g)" "$vf"
expect_code 0 "a regular log of ours back in place: doctor is content" "$CAIRN" doctor

# --- leftovers of interrupted creations -------------------------------------------
export CAIRN_HOME="$T/left"
new kept
new held
kd=$(live "$kept")
pk=$(dirname "$kd")
nlisted() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# Crafted as a kill -9 leaves them: a folder with a lock and a 384 KiB
# staging file, an empty folder, a staging file beside a log, a folder
# with a file cairn does not know, and a leftover a live writer holds.
mkdir -m 700 "$pk/01LEFTOVERSTAGING0000000000" "$pk/01LEFTOVEREMPTY000000000000" "$pk/01LEFTOVERFOREIGN0000000000"
head -c 393216 /dev/urandom >"$pk/01LEFTOVERSTAGING0000000000/.session.jsonl.zst.0123456789ab.tmp"
: >"$pk/01LEFTOVERSTAGING0000000000/session.lock"
head -c 1000 /dev/urandom >"$kd/.session.jsonl.zst.a1b2c3d4e5f6.tmp"
echo notes >"$pk/01LEFTOVERFOREIGN0000000000/notes.txt"
hd=$(live "$held")
mv "$hd/session.jsonl.zst" "$T/held.zst" # its creation is "in progress"
: >"$hd/.session.jsonl.zst.ffffffffffff.tmp"
(exec 9>>"$hd/session.lock" && flock 9 && exec sleep 60) >/dev/null 2>&1 &
holder=$!
sleep 0.2
chmod 600 "$pk"/*/.session.jsonl.zst.*.tmp "$pk"/*/session.lock "$pk/01LEFTOVERFOREIGN0000000000/notes.txt"
check "leftovers are never listed as sessions" test "$(nlisted)" -eq 1
expect_code 0 "doctor reports leftovers as notes, not problems (exit 0)" "$CAIRN" doctor --json
check "... every one of them" pyj 'sorted(n["session"] for n in N("leftover"))==sorted(["01LEFTOVERSTAGING0000000000","01LEFTOVEREMPTY000000000000","01LEFTOVERFOREIGN0000000000",A[0],A[1]]) and not v["problems"]' "$kept" "$held"
check "... with the staging file's size" pyj '[n for n in N("leftover") if n["session"]=="01LEFTOVERSTAGING0000000000" and "393216 bytes" in n["message"] and "doctor --fix" in n["message"]]'
expect_code 0 "doctor --fix" "$CAIRN" doctor --fix
check "... removes the folder with a staging file" test ! -e "$pk/01LEFTOVERSTAGING0000000000"
check "... removes the empty folder" test ! -e "$pk/01LEFTOVEREMPTY000000000000"
check "... removes the staging file beside a log" test ! -e "$kd/.session.jsonl.zst.a1b2c3d4e5f6.tmp"
check "... keeps that log" test -f "$kd/session.jsonl.zst"
check "... keeps a file it does not know (and its folder)" test -f "$pk/01LEFTOVERFOREIGN0000000000/notes.txt"
check "... leaves alone what a live writer holds" test -e "$hd/.session.jsonl.zst.ffffffffffff.tmp"
check "... saying so" grep -q "$held: leftover: .*in use by a writer" <<<"$OUT"
expect_code 0 "the session beside the staging file still reads" "$CAIRN" log cat "$kept"
kill "$holder"
wait "$holder" 2>/dev/null
rm "$pk/01LEFTOVERFOREIGN0000000000/notes.txt"
expect_code 0 "once the writer is gone, doctor --fix --json" "$CAIRN" doctor --fix --json
check "... removes the rest" test ! -e "$hd" -a ! -e "$pk/01LEFTOVERFOREIGN0000000000"
check "... noting each removal" pyj 'sorted(n["session"] for n in N("removed"))==sorted([A[0],"01LEFTOVERFOREIGN0000000000"])' "$held"
expect_code 0 "after which doctor finds no leftover" "$CAIRN" doctor --json
check "... none" pyj 'not N("leftover")'

# Real kills during creation (big first batches, killed at random
# instants) while another creator runs and doctor --fix cleans up: no
# creation fails, every session that exists reads, nothing else is listed.
big=$(python3 -c 'import base64,os,json; print("\n".join(json.dumps({"type":"user/message","turn":"t1","data":{"text":base64.b64encode(os.urandom(200000)).decode()}}) for _ in range(2)))')
export CAIRN_HOME="$T/kills"
(
	for i in $(seq 1 40); do
		"$CAIRN" log append --new --cwd "$T/c" <<<"$MSG" >/dev/null || echo "creation $i failed" >>"$T/creator-fail"
	done
) &
creator=$!
for i in $(seq 1 40); do
	"$CAIRN" log append --new --cwd "$T/k" <<<"$big" >/dev/null 2>&1 &
	sleep "0.00$((RANDOM % 10))"
	kill -9 $! 2>/dev/null
	wait $! 2>/dev/null
	"$CAIRN" doctor --fix >/dev/null 2>&1 || "$CAIRN" doctor --fix >"$T/fix-$i" 2>&1
done
wait "$creator"
check "no creation failed while doctor --fix ran" test ! -e "$T/creator-fail"
expect_code 0 "after the kills, doctor --fix --json" "$CAIRN" doctor --fix --json
logs=$(find "$CAIRN_HOME/sessions" -name session.jsonl.zst | wc -l)
check "... leaves only folders with a log ($logs)" test "$(find "$CAIRN_HOME/sessions" -mindepth 2 -maxdepth 2 -type d | wc -l)" -eq "$logs"
check "... and no staging file" test -z "$(find "$CAIRN_HOME" -name '.session.jsonl.zst.*')"
check "... lists exactly the logs" test "$(nlisted)" -eq "$logs"
bad=0
for f in $(find "$CAIRN_HOME/sessions" -name session.jsonl.zst); do
	"$CAIRN" inspect "$f" >/dev/null || bad=$((bad + 1))
done
check "... every one of which reads" test "$bad" -eq 0

finish
