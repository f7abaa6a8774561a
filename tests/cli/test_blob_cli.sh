#!/usr/bin/env bash
# test_blob_cli.sh — blobs from the command line: `log blob` prints the
# exact bytes and classifies a missing or damaged blob; inspect and doctor
# report a missing or damaged blob named by a durable event, by session and
# digest; repair removes only blobs no durable event names; rm, restore and
# purge take the blobs along; repair --salvage copies them; a malformed
# "blob" field and an oversized line are refused, naming what they break.
# Blobs are put in place by hand, as a producer does (blob first, then the
# event naming it). Needs python3 and sha256sum.
source "$(dirname "$0")/lib.sh"

pyj() { python3 -c 'import json,sys; A=sys.argv[2:]; v=json.load(sys.stdin); sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"; }
sdir() { local m=("$CAIRN_HOME"/"${2:-sessions}"/*/"$1"); [ -d "${m[0]}" ] && echo "${m[0]}"; }
# put_blob DIR FILE: store FILE's bytes as DIR/blobs/<sha256>; prints the digest.
put_blob() {
	local h
	h=$(sha256sum "$2" | cut -c1-64)
	mkdir -p "$1/blobs" && chmod 700 "$1/blobs"
	cp "$2" "$1/blobs/$h" && chmod 600 "$1/blobs/$h"
	echo "$h"
}
ref() { echo "\"blob\":{\"sha256\":\"$1\",\"size\":$2}"; }

# --- a session whose user/message and tool/result name blobs ---------------
expect_code 0 "a new session" "$CAIRN" log append --new --no-cwd <<<'{"type":"session/meta","data":{"title":"blobs"}}'
id=${OUT%% *}
D=$(sdir "$id")
# Bytes a terminal would act on, a NUL, and no final newline.
printf 'big \033]0;title\007 text\000 end' >"$T/one"
head -c 300000 /dev/urandom >"$T/two"
h1=$(put_blob "$D" "$T/one")
h2=$(put_blob "$D" "$T/two")
s1=$(stat -c %s "$T/one")
expect_code 0 "events naming the blobs are appended after them" "$CAIRN" log append "$id" --expect-seq 2 <<EOF
{"type":"user/message","data":{"text":"big ...","$(ref "$h1" "$s1" | cut -c2-)}}
{"type":"turn/start","turn":"t1","data":{}}
{"type":"tool/call","turn":"t1","data":{"call_id":"c","name":"n","args":{}}}
{"type":"tool/result","turn":"t1","data":{"call_id":"c","status":"ok","output":"head...tail",$(ref "$h2" 300000)}}
{"type":"turn/end","turn":"t1","data":{"outcome":"completed"}}
EOF

# --- log blob --------------------------------------------------------------
"$CAIRN" log blob "$id" "$h1" >"$T/out1" 2>"$T/err"
check "log blob writes the exact bytes into a pipe (controls and NUL included)" cmp -s "$T/one" "$T/out1"
"$CAIRN" log blob "$D/session.jsonl.zst" "$h2" >"$T/out2"
check "log blob by PATH finds blobs/ beside the log" cmp -s "$T/two" "$T/out2"
expect_code 3 "log blob of a blob that is not there: missing" "$CAIRN" log blob "$id" "$(printf x | sha256sum | cut -c1-64)"
expect_code 2 "log blob of something that is not a digest: usage" "$CAIRN" log blob "$id" ../session.jsonl.zst
expect_code 3 "log blob of an unknown session: missing" "$CAIRN" log blob nosuchsession "$h1"

# --- inspect and doctor, clean ---------------------------------------------
expect_code 0 "inspect --json of a session with its blobs" "$CAIRN" inspect --json "$id"
check "... counts 2 named blobs and none bad" pyj 'v["blobs"]["named"]==2 and v["blobs"]["bad"]==[]'
expect_code 0 "doctor is clean" "$CAIRN" doctor

# --- a damaged and a missing blob ------------------------------------------
cp "$D/blobs/$h2" "$T/two.keep"
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(1000); b=f.read(1); f.seek(1000); f.write(bytes([b[0]^1]))' "$D/blobs/$h2"
expect_code 4 "log blob of a damaged blob: corrupt" "$CAIRN" log blob "$id" "$h2"
check "... prints nothing of it" test -z "$OUT"
check "... and names it" grep -q "$h2" <<<"$ERR"
mv "$D/blobs/$h1" "$T/one.keep"
expect_code 4 "inspect with a missing and a damaged blob: corrupt" "$CAIRN" inspect --json "$id"
check "... names both, by session and digest" \
	pyj 'sorted(b["sha256"] for b in v["blobs"]["bad"])==sorted(A[:2]) and all(A[2] in b["message"] and b["class"]=="corrupt" for b in v["blobs"]["bad"])' "$h1" "$h2" "$id"
expect_code 4 "inspect (text) too" "$CAIRN" inspect "$id"
check "... one error line per blob" bash -c '[ "$(grep -c "^error: corrupt: session" <<<"$1")" -eq 2 ]' _ "$OUT"
expect_code 4 "doctor reports them: corrupt" "$CAIRN" doctor --json
check "... each a problem of that session naming the blob" \
	pyj 'len([p for p in v["problems"] if p["session"]==A[0] and p["class"]=="corrupt" and (A[1] in p["message"] or A[2] in p["message"])])==2' "$id" "$h1" "$h2"
expect_code 0 "repair leaves named blobs alone, damaged or not" "$CAIRN" repair --json "$id"
check "... removes nothing" pyj 'v["blobs_removed"]==0'
check "... the damaged one is still there for a human" test -f "$D/blobs/$h2"
mv "$T/one.keep" "$D/blobs/$h1"
cp "$T/two.keep" "$D/blobs/$h2"

# --- a crash between a blob and its event ----------------------------------
printf 'never named' >"$T/orphan"
ho=$(put_blob "$D" "$T/orphan")
printf 'part' >"$D/blobs/.blob.0011223344556677.tmp"
expect_code 0 "inspect ignores a blob no event names" "$CAIRN" inspect "$id"
expect_code 0 "repair removes the orphan and a dead temporary file" "$CAIRN" repair --json "$id"
check "... two removed" pyj 'v["blobs_removed"]==2 and v["status"]=="repaired"'
check "... the orphan is gone" test ! -e "$D/blobs/$ho"
check "... the named blobs stay" test -f "$D/blobs/$h1" -a -f "$D/blobs/$h2"
expect_code 0 "repair again: nothing to do" "$CAIRN" repair "$id"
check "... says so" grep -q "nothing to repair" <<<"$OUT"

# --- rm, restore, purge ----------------------------------------------------
expect_code 0 "rm" "$CAIRN" rm "$id"
TD=$(sdir "$id" trash)
check "... the blobs go to the trash with the session" test -f "$TD/blobs/$h1" -a -f "$TD/blobs/$h2"
mv "$TD/blobs/$h1" "$T/one.keep"
expect_code 4 "doctor checks the blobs of a trashed session too" "$CAIRN" doctor --json
check "... naming it" pyj 'any(p["session"]==A[0] and A[1] in p["message"] for p in v["problems"])' "$id" "$h1"
mv "$T/one.keep" "$TD/blobs/$h1"
expect_code 0 "restore" "$CAIRN" restore "$id"
"$CAIRN" log blob "$id" "$h2" >"$T/out2"
check "... the blobs come back with it" cmp -s "$T/two" "$T/out2"
expect_code 0 "rm again" "$CAIRN" rm "$id"
expect_code 0 "purge removes a session with blobs" "$CAIRN" purge --yes "$id"
check "... and its folder, blobs/ included" test -z "$(sdir "$id" trash)"

# --- salvage ---------------------------------------------------------------
expect_code 0 "a session to damage" "$CAIRN" log append --new --no-cwd <<<'{"type":"session/meta","data":{"title":"s"}}'
sid=${OUT%% *}
S=$(sdir "$sid")
h1=$(put_blob "$S" "$T/one")
expect_code 0 "... an event naming a blob" "$CAIRN" log append "$sid" --expect-seq 2 <<<"{\"type\":\"user/message\",\"data\":{\"text\":\"x\",$(ref "$h1" "$s1")}}"
expect_code 0 "... and a last frame" "$CAIRN" log append "$sid" --expect-seq 3 <<<'{"type":"session/meta","data":{"title":"t"}}'
# Damage inside the last frame, under no watermark: the catalog goes.
L="$S/session.jsonl.zst"
python3 -c 'import sys,os; f=open(sys.argv[1],"r+b"); n=os.path.getsize(sys.argv[1]); f.seek(n-6); b=f.read(1); f.seek(n-6); f.write(bytes([b[0]^0xff]))' "$L"
rm -f "$CAIRN_HOME"/index.db*
expect_code 0 "repair --salvage of the damaged log" "$CAIRN" repair --salvage --json "$sid"
nid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$OUT")
check "... copies the blob its salvaged events name" pyj 'v["blobs"]==1 and v["blobs_lost"]==[]'
"$CAIRN" log blob "$nid" "$h1" >"$T/out1"
check "... readable in the new session" cmp -s "$T/one" "$T/out1"
expect_code 0 "inspect of the new session: every blob there" "$CAIRN" inspect --json "$nid"
check "... one named, none bad" pyj 'v["blobs"]["named"]==1 and v["blobs"]["bad"]==[]'

# --- refusals --------------------------------------------------------------
expect_code 2 "a malformed blob field is refused" "$CAIRN" log append --new --no-cwd <<<'{"type":"user/message","data":{"text":"x","blob":{"sha256":"ABC","size":1}}}'
check "... naming the field" grep -q "'blob'" <<<"$ERR"
python3 -c 'import json; print(json.dumps({"type":"user/message","data":{"text":"a"*1048600}}))' >"$T/long"
expect_code 2 "an event line over the limit is refused" "$CAIRN" log append --new --no-cwd <"$T/long"
check "... naming the limit" grep -q "the limit is EVENT_MAX_LINE = 1048576" <<<"$ERR"

echo "1..$_n"
finish
