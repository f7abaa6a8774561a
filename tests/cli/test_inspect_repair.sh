#!/usr/bin/env bash
# test_inspect_repair.sh — `inspect` and `repair` from the command line:
# every status (ok, torn, corrupt, unsupported, missing), what each command
# may and may not change, closing an interrupted turn, --salvage, and the
# writer lock held by another process.
# Needs python3 (JSON checks, byte flips), zstd (crafted logs) and flock(1).
source "$(dirname "$0")/lib.sh"

# --- helpers -------------------------------------------------------------

# pyj EXPR [ARG...]: true when the python EXPR holds for v = the JSON in
# $OUT (A = the ARGs).
pyj() { python3 -c 'import json,sys; A=sys.argv[2:]; v=json.load(sys.stdin); sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"; }
# pyl EXPR [ARG...]: the same with L = the JSON lines of $OUT.
pyl() { python3 -c 'import json,sys; A=sys.argv[2:]; L=[json.loads(x) for x in sys.stdin.read().splitlines()]; sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"; }
# logfile ID: the log path of session ID under $CAIRN_HOME.
logfile() { local m=("$CAIRN_HOME"/sessions/*/"$1"/session.jsonl.zst); [ -f "${m[0]}" ] && echo "${m[0]}"; }
fsize() { stat -c %s "$1"; }
# flip FILE OFFSET: invert every bit of one byte.
flip() { python3 -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^0xff]))' "$1" "$2"; }
# frame FILE [ZSTD-OPTION...] -- LINE...: append the lines as one zstd frame.
frame() {
	local f=$1 opts=()
	shift
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	printf '%s\n' "$@" >"$T/frame.txt"
	zstd -q -c --check --content-size "${opts[@]}" "$T/frame.txt" >>"$f"
}
hdr() { echo "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":${2:-1},\"id\":\"$1\",\"created_at\":1,\"cwd\":null}}"; }
ev() { echo "{\"seq\":$1,\"t\":2,\"type\":\"$2\"$3,\"data\":$4}"; }
# append ID SEQ BATCH: log append that must succeed (sets OUT).
append() { expect_code 0 "append to $1 at seq $2" "$CAIRN" log append "$1" --expect-seq "$2" <<<"$3"; }

# Most checks below rewind and tear logs by hand, which only a crash can do,
# and only to a write that was never acknowledged. With the catalog, every
# acknowledged byte is under the durable watermark, where such damage is
# corruption (the last section tests that); so until then each command runs
# without a catalog, under the log store's structural rules alone.
export CAIRN_REAL=$CAIRN
CAIRN=$T/cairn-nocat
cat >"$CAIRN" <<'SH'
#!/bin/sh
rm -f "$CAIRN_HOME/index.db" "$CAIRN_HOME/index.db-wal" "$CAIRN_HOME/index.db-shm"
exec "$CAIRN_REAL" "$@"
SH
chmod +x "$CAIRN"

# A turn with three tool calls: c1 never started, c2 started, c3 finished.
B1='{"type":"turn/start","turn":"t1","data":{}}
{"type":"user/message","turn":"t1","data":{"text":"run the tools"}}
{"type":"tool/call","turn":"t1","data":{"call_id":"c1","name":"read","args":{"path":"a"}}}
{"type":"tool/call","turn":"t1","data":{"call_id":"c2","name":"write","args":{"path":"b"}}}
{"type":"tool/started","turn":"t1","data":{"call_id":"c2"}}
{"type":"tool/call","turn":"t1","data":{"call_id":"c3","name":"ls","args":{}}}
{"type":"tool/started","turn":"t1","data":{"call_id":"c3"}}
{"type":"tool/result","turn":"t1","data":{"call_id":"c3","status":"ok","output":"x"}}'
B2='{"type":"assistant/text","turn":"t1","data":{"text":"working on it"}}'
B3='{"type":"assistant/text","turn":"t1","data":{"text":"still working"}}'

# --- ok ----------------------------------------------------------------------

expect_code 0 "a session with an open turn" "$CAIRN" log append --new --no-cwd <<<"$B1"
id=${OUT%% *}
f=$(logfile "$id")
S1=$(fsize "$f")
append "$id" 9 "$B2"
S2=$(fsize "$f")
cp "$f" "$T/ok.zst"
expect_code 0 "inspect --json of an ok log exits 0" "$CAIRN" inspect --json "$id"
check "inspect --json: status ok, events, next_seq, turns" \
	pyj 'v["status"]=="ok" and v["events"]==10 and v["next_seq"]==10 and v["turns"]==1 and v["id"]==A[0]' "$id"
check "inspect --json: open_turn, torn_bytes 0, unmatched calls, no error" \
	pyj 'v["open_turn"]=="t1" and v["torn_bytes"]==0 and v["unmatched_tool_calls"]==["c1","c2"] and v.get("error") is None'
expect_code 0 "inspect (text) of an ok log" "$CAIRN" inspect "$id"
check "inspect (text) reports status, next seq, open turn and calls" \
	bash -c 'grep -q "^status: ok" <<<"$1" && grep -q "^next_seq: 10" <<<"$1" && grep -q "^open_turn: t1" <<<"$1" && grep -q "^unmatched_tool_calls: c1 c2" <<<"$1"' _ "$OUT"
check "inspect changes nothing" cmp -s "$f" "$T/ok.zst"

# --- torn ----------------------------------------------------------------------

last=$((S2 - S1))
for keep in 1 2 3 4 5 6 9 $((last / 2)) $((last - 4)) $((last - 1)); do
	cp "$T/ok.zst" "$f"
	truncate -s $((S1 + keep)) "$f"
	cp "$f" "$T/torn.zst"
	expect_code 0 "torn ($keep of $last bytes of the last frame): inspect exits 0" "$CAIRN" inspect --json "$id"
	check "... status torn, torn_bytes $keep, events and next_seq of the complete frames" \
		pyj 'v["status"]=="torn" and v["torn_bytes"]==int(A[0]) and v["events"]==9 and v["next_seq"]==9 and v["open_turn"]=="t1" and v["unmatched_tool_calls"]==["c1","c2"] and v["turns"]==1' "$keep"
	check "... inspect changed nothing" cmp -s "$f" "$T/torn.zst"
done
expect_code 0 "inspect (text) of a torn log" "$CAIRN" inspect "$id"
check "... says torn and how many bytes" \
	bash -c 'grep -q "^status: torn" <<<"$1" && grep -q "^torn_bytes: $2" <<<"$1"' _ "$OUT" $((last - 1))
expect_code 0 "log cat of a torn log exits 0" "$CAIRN" log cat "$id"
check "... prints the complete frames' events" pyl '[e["seq"] for e in L]==list(range(9))'
check "... notes the torn tail on stderr" grep -q torn <<<"$ERR"
check "... changed nothing" cmp -s "$f" "$T/torn.zst"

expect_code 0 "repair of a torn log with an open turn" "$CAIRN" repair "$id"
check "... reports the cut" grep -q "cut $((last - 1)) bytes" <<<"$OUT"
check "... reports the closers with their seqs" \
	bash -c 'grep -q "seq 9: tool/result c1 not_executed" <<<"$1" && grep -q "seq 10: tool/result c2 outcome_unknown" <<<"$1" && grep -q "seq 11: turn/end interrupted" <<<"$1" && ! grep -q "tool/result c3" <<<"$1"' _ "$OUT"
check "... the file is the cut prefix plus one frame" \
	bash -c 'cmp -s -n "$2" "$1" "$3" && [ "$(stat -c %s "$1")" -gt "$2" ]' _ "$f" "$S1" "$T/ok.zst"
cp "$f" "$T/repaired.zst"
expect_code 0 "inspect after repair" "$CAIRN" inspect --json "$id"
check "... ok, no open turn, no unmatched call, next_seq 12" \
	pyj 'v["status"]=="ok" and v["open_turn"] is None and v["unmatched_tool_calls"]==[] and v["next_seq"]==12 and v["torn_bytes"]==0 and v["turns"]==1'
expect_code 0 "log cat after repair" "$CAIRN" log cat "$id"
check "... seq contiguous, the torn event gone" \
	pyl '[e["seq"] for e in L]==list(range(12)) and all(e["data"].get("text")!="working on it" for e in L)'
check "... c1 closed as not_executed, source_seqs = [seq of its call], turn t1" \
	pyl 'L[9]["type"]=="tool/result" and L[9]["turn"]=="t1" and L[9]["data"]["call_id"]=="c1" and L[9]["data"]["status"]=="not_executed" and L[9]["data"]["source_seqs"]==[3] and L[3]["data"]["call_id"]=="c1"'
check "... c2 (started) closed as outcome_unknown, source_seqs = [4]" \
	pyl 'L[10]["type"]=="tool/result" and L[10]["turn"]=="t1" and L[10]["data"]["call_id"]=="c2" and L[10]["data"]["status"]=="outcome_unknown" and L[10]["data"]["source_seqs"]==[4] and L[4]["data"]["call_id"]=="c2"'
check "... then turn/end interrupted in turn t1" \
	pyl 'L[11]["type"]=="turn/end" and L[11]["turn"]=="t1" and L[11]["data"]["outcome"]=="interrupted"'
check "... committed events are unchanged" \
	test "$(head -n 9 <<<"$OUT")" = "$("$CAIRN" log cat "$T/torn.zst" 2>/dev/null)"
expect_code 0 "a second repair" "$CAIRN" repair "$id"
check "... says there is nothing to repair" grep -q 'nothing to repair' <<<"$OUT"
check "... changes nothing" cmp -s "$f" "$T/repaired.zst"
expect_code 0 "a third repair, --json" "$CAIRN" repair --json "$id"
check "... status unchanged, nothing cut or appended" \
	pyj 'v["status"]=="unchanged" and v["cut_bytes"]==0 and v["appended"]==[] and v["next_seq"]==12 and v["id"]==A[0]' "$id"
check "... changes nothing" cmp -s "$f" "$T/repaired.zst"

cp "$T/torn.zst" "$f"
expect_code 0 "repair --json of a torn log" "$CAIRN" repair --json "$id"
check "... status repaired, cut_bytes, the closers with seq/type/turn/data, next_seq" \
	pyj 'v["status"]=="repaired" and v["cut_bytes"]==int(A[0]) and [(c["seq"],c["type"],c["turn"]) for c in v["appended"]]==[(9,"tool/result","t1"),(10,"tool/result","t1"),(11,"turn/end","t1")] and v["appended"][0]["data"]["source_seqs"]==[3] and v["appended"][1]["data"]["source_seqs"]==[4] and v["next_seq"]==12' $((last - 1))

cp "$T/ok.zst" "$f"
truncate -s $((S2 - 3)) "$f"
expect_code 0 "append to a torn log cuts the tail first" "$CAIRN" log append "$id" --expect-seq 9 <<<"$B3"
check "... the new event takes seq 9" test "$OUT" = "$id 10"
check "... and says so" grep -q 'torn tail' <<<"$ERR"
expect_code 0 "... log cat" "$CAIRN" log cat "$id"
check "... holds the new event, not the torn one" pyl 'L[-1]["seq"]==9 and L[-1]["data"]["text"]=="still working" and len(L)==10'

cp "$T/ok.zst" "$f"
expect_code 0 "repair of an ok log with an open turn closes it" "$CAIRN" repair --json "$id"
check "... without cutting anything" \
	pyj 'v["status"]=="repaired" and v["cut_bytes"]==0 and len(v["appended"])==3 and v["next_seq"]==13'

# Torn with no open turn: only the cut.
expect_code 0 "a closed turn" "$CAIRN" log append --new --no-cwd <<<'{"type":"turn/start","turn":"t1","data":{}}
{"type":"turn/end","turn":"t1","data":{"outcome":"completed"}}'
cid=${OUT%% *}
cf=$(logfile "$cid")
c1=$(fsize "$cf")
append "$cid" 3 '{"type":"user/message","data":{"text":"next"}}'
truncate -s $(($(fsize "$cf") - 2)) "$cf"
expect_code 0 "repair of a torn log without an open turn" "$CAIRN" repair --json "$cid"
check "... only cuts" pyj 'v["status"]=="repaired" and v["cut_bytes"]>0 and v["appended"]==[] and v["next_seq"]==3'
check "... back to the complete frames" test "$(fsize "$cf")" -eq "$c1"

# Two open turns: both get closed.
expect_code 0 "two open turns" "$CAIRN" log append --new --no-cwd <<<'{"type":"turn/start","turn":"ta","data":{}}
{"type":"tool/call","turn":"ta","data":{"call_id":"x1","name":"n","args":null}}
{"type":"turn/start","turn":"tb","data":{"parent_turn":null}}
{"type":"tool/call","turn":"tb","data":{"call_id":"x2","name":"n","args":[]}}
{"type":"tool/started","turn":"tb","data":{"call_id":"x2"}}'
tid=${OUT%% *}
expect_code 0 "... repair" "$CAIRN" repair "$tid"
expect_code 0 "... log cat" "$CAIRN" log cat "$tid"
check "... every call has a result in its own turn and every turn ended interrupted" \
	pyl '{(e["turn"],e["data"]["call_id"],e["data"]["status"],tuple(e["data"]["source_seqs"])) for e in L if e["type"]=="tool/result"}=={("ta","x1","not_executed",(2,)),("tb","x2","outcome_unknown",(4,))} and sorted(e["turn"] for e in L if e["type"]=="turn/end" and e["data"]["outcome"]=="interrupted")==["ta","tb"]'
expect_code 0 "... inspect" "$CAIRN" inspect --json "$tid"
check "... no open turn left" pyj 'v["open_turn"] is None and v["unmatched_tool_calls"]==[] and v["turns"]==2'

# Repair through a PATH: locks session.lock beside it.
E="$T/elsewhere"
mkdir -p "$E"
cp "$T/torn.zst" "$E/any name.log"
expect_code 0 "repair PATH" "$CAIRN" repair --json "$E/any name.log"
check "... repaired it" pyj 'v["status"]=="repaired" and v["next_seq"]==12'
check "... with session.lock in its directory" test -f "$E/session.lock"

# --- corrupt ---------------------------------------------------------------------

expect_code 0 "corrupt: a session of four frames" "$CAIRN" log append --new --no-cwd <<<"$B1"
kid=${OUT%% *}
kf=$(logfile "$kid")
K1=$(fsize "$kf")
append "$kid" 9 "$B2"
K2=$(fsize "$kf")
append "$kid" 10 "$B3"
KCAT=$("$CAIRN" log cat "$kid")
flip "$kf" $(((K1 + K2) / 2))
cp "$kf" "$T/corrupt.zst"
expect_code 4 "a flipped byte in a committed frame: inspect exits 4" "$CAIRN" inspect --json "$kid"
check "... status corrupt, error {class corrupt, message}" \
	pyj 'v["status"]=="corrupt" and v["error"]["class"]=="corrupt" and len(v["error"]["message"])>0'
check "... the valid prefix: events, next_seq, open turn" \
	pyj 'v["events"]==9 and v["next_seq"]==9 and v["open_turn"]=="t1" and v["torn_bytes"]==0'
expect_code 4 "inspect (text) of a corrupt log" "$CAIRN" inspect "$kid"
check "... says corrupt and points at --salvage" \
	bash -c 'grep -q "^status: corrupt" <<<"$1" && grep -q -- --salvage <<<"$1"' _ "$OUT"
expect_code 4 "log cat of a corrupt log exits 4" "$CAIRN" log cat "$kid"
expect_code 4 "repair of a corrupt log exits 4" "$CAIRN" repair "$kid"
check "... and points at --salvage" grep -q -- --salvage <<<"$ERR"
expect_code 4 "repair --json of a corrupt log exits 4" "$CAIRN" repair --json "$kid"
expect_code 4 "append to a corrupt log exits 4" "$CAIRN" log append "$kid" --expect-seq 11 <<<"$B3"
expect_code 4 "append at the valid prefix's seq exits 4 too" "$CAIRN" log append "$kid" --expect-seq 9 <<<"$B3"
check "inspect, cat, repair and append left it byte-identical" cmp -s "$kf" "$T/corrupt.zst"

expect_code 0 "repair --salvage of a corrupt log" "$CAIRN" repair --salvage "$kid"
nid=$OUT
check "... prints one new session id" bash -c '[[ $1 =~ ^[0-9A-HJKMNP-TV-Z]{26}$ && $1 != "$2" ]]' _ "$nid" "$kid"
check "... the original is untouched" cmp -s "$kf" "$T/corrupt.zst"
expect_code 0 "... the new session inspects ok" "$CAIRN" inspect --json "$nid"
check "... ok, 12 events, its turn closed" \
	pyj 'v["status"]=="ok" and v["events"]==12 and v["next_seq"]==12 and v["open_turn"] is None and v["unmatched_tool_calls"]==[]'
expect_code 0 "... log cat of the copy" "$CAIRN" log cat "$nid"
COPY=$OUT
check "... header: new id, salvaged_from the old one" \
	pyl 'L[0]["data"]["id"]==A[0] and L[0]["data"]["salvaged_from"]["id"]==A[1]' "$nid" "$kid"
OUT="$(head -n 9 <<<"$KCAT")
$COPY"
check "... the valid prefix's events copied exactly (seq, t, type, turn, data)" \
	pyl 'len(L)==21 and all(L[i]==L[9+i] for i in range(1,9))'
check "... then the closers" \
	pyl '[(e["seq"],e["type"],e["data"].get("status"),e["data"].get("source_seqs")) for e in L[18:]]==[(9,"tool/result","not_executed",[3]),(10,"tool/result","outcome_unknown",[4]),(11,"turn/end",None,None)] and L[20]["data"]["outcome"]=="interrupted"'
expect_code 0 "repair --salvage --json" "$CAIRN" repair --salvage --json "$kid"
check "... reports the new id, events and closers" \
	pyj 'v["id"]!=A[0] and v["events"]==9 and v["closers"]==3' "$kid"
check "... the original is still untouched" cmp -s "$kf" "$T/corrupt.zst"
expect_code 2 "repair --salvage of a log that is not corrupt is a usage error" "$CAIRN" repair --salvage "$id"

cp "$T/ok.zst" "$T/hdr.zst"
flip "$T/hdr.zst" 20
expect_code 4 "a damaged header frame is corrupt" "$CAIRN" inspect --json "$T/hdr.zst"
check "... with no valid events" pyj 'v["status"]=="corrupt" and v["events"]==0'
expect_code 4 "... --salvage has nothing to copy" "$CAIRN" repair --salvage "$T/hdr.zst"
head -c 10 "$T/ok.zst" >"$T/short.zst"
expect_code 4 "an incomplete header frame is corrupt, not torn" "$CAIRN" inspect --json "$T/short.zst"
: >"$T/empty.zst"
expect_code 4 "an empty file is corrupt" "$CAIRN" inspect --json "$T/empty.zst"
head -c 300 /dev/urandom >"$T/garbage.zst"
expect_code 4 "random bytes are corrupt" "$CAIRN" inspect --json "$T/garbage.zst"
cp "$T/ok.zst" "$T/skip.zst"
printf '\x50\x2a\x4d\x18\x04\x00\x00\x00abcd' >>"$T/skip.zst"
expect_code 4 "a skippable frame is corrupt" "$CAIRN" inspect --json "$T/skip.zst"
cp "$T/ok.zst" "$T/junk.zst"
printf 'junk' >>"$T/junk.zst"
expect_code 4 "bytes after the last frame that start no frame are corrupt" "$CAIRN" inspect --json "$T/junk.zst"
cp "$T/skip.zst" "$T/before"
expect_code 4 "... repair refuses it" "$CAIRN" repair "$T/skip.zst"
check "... unchanged" cmp -s "$T/skip.zst" "$T/before"

# Crafted logs: the format's integrity and shape rules.
craft_case() { # CODE DESC LINE-OR-OPTIONS...: header frame + one frame
	local want=$1 desc=$2 file="$T/craft-$_n.zst"
	shift 2
	rm -f "$file"
	frame "$file" -- "$(hdr cr)"
	frame "$file" "$@"
	cp "$file" "$T/before"
	expect_code "$want" "crafted: $desc" "$CAIRN" inspect --json "$file"
	check "... unchanged" cmp -s "$file" "$T/before"
}
craft_case 0 "a log written by the zstd tool is ok" -- "$(ev 1 user/message '' '{"text":"x"}')"
craft_case 0 "several events in one frame" -- "$(ev 1 user/message '' '{"text":"x"}')" "$(ev 2 session/meta '' '{"title":"t"}')"
craft_case 0 "an unknown ignorable type" -- "$(ev 1 x/future ',"ignorable":true' '{}')"
craft_case 5 "an unknown required type is unsupported" -- "$(ev 1 x/future '' '{}')"
check "... status unsupported, error class unsupported" pyj 'v["status"]=="unsupported" and v["error"]["class"]=="unsupported"'
craft_case 5 "an unknown turn/end outcome is unsupported" -- "$(ev 1 turn/end ',"turn":"t"' '{"outcome":"exploded"}')"
craft_case 4 "a frame without content size" --no-content-size -- "$(ev 1 user/message '' '{"text":"x"}')"
check "... says so" pyj '"content size" in v["error"]["message"]'
craft_case 4 "a frame without checksum" --no-check -- "$(ev 1 user/message '' '{"text":"x"}')"
craft_case 4 "a seq gap" -- "$(ev 2 user/message '' '{"text":"x"}')"
craft_case 4 "a repeated seq" -- "$(ev 0 user/message '' '{"text":"x"}')"
craft_case 4 "a duplicate key" -- '{"seq":1,"t":2,"type":"user/message","data":{"text":"x","text":"y"}}'
craft_case 4 "a missing required field" -- "$(ev 1 user/message '' '{}')"
craft_case 4 "a line that is not JSON" -- 'not json'
craft_case 4 "an empty line" -- "$(ev 1 user/message '' '{"text":"x"}')" ''
craft_case 4 "a second header" -- "$(hdr cr)"
rm -f "$T/nolf.zst"
frame "$T/nolf.zst" -- "$(hdr cr)"
printf '%s' "$(ev 1 user/message '' '{"text":"x"}')" >"$T/frame.txt"
zstd -q -c --check "$T/frame.txt" >>"$T/nolf.zst"
expect_code 4 "crafted: content without its final newline" "$CAIRN" inspect --json "$T/nolf.zst"
printf '%s\n' "$(hdr cr)" "$(ev 1 user/message '' '{"text":"x"}')" >"$T/frame.txt"
rm -f "$T/two.zst"
zstd -q -c --check "$T/frame.txt" >"$T/two.zst"
expect_code 4 "crafted: a header frame with a second line" "$CAIRN" inspect --json "$T/two.zst"

# --- unsupported ----------------------------------------------------------------

U="$CAIRN_HOME/sessions/_no-cwd/fmt2"
mkdir -p -m 700 "$U"
frame "$U/session.jsonl.zst" -- "$(hdr fmt2 2)"
frame "$U/session.jsonl.zst" -- "$(ev 1 user/message '' '{"text":"x"}')"
chmod 600 "$U/session.jsonl.zst"
cp "$U/session.jsonl.zst" "$T/before"
expect_code 5 "header format 2: inspect exits 5" "$CAIRN" inspect --json fmt2
check "... status unsupported, error class unsupported naming the format" \
	pyj 'v["status"]=="unsupported" and v["error"]["class"]=="unsupported" and "2" in v["error"]["message"]'
expect_code 5 "... log cat exits 5" "$CAIRN" log cat fmt2
expect_code 5 "... repair exits 5" "$CAIRN" repair fmt2
expect_code 5 "... repair --salvage exits 5" "$CAIRN" repair --salvage fmt2
expect_code 5 "... append exits 5" "$CAIRN" log append fmt2 --expect-seq 2 <<<"$B3"
check "... byte-identical afterwards" cmp -s "$U/session.jsonl.zst" "$T/before"
printf '%s\n' "$(hdr fmt2 2)" >"$T/frame.txt"
zstd -q -c --check "$T/frame.txt" >"$T/fmt2-torn.zst"
frame "$T/fmt2-torn.zst" -- "$(ev 1 user/message '' '{"text":"x"}')"
truncate -s -3 "$T/fmt2-torn.zst"
cp "$T/fmt2-torn.zst" "$T/before"
expect_code 5 "format 2 with a torn tail is unsupported" "$CAIRN" inspect --json "$T/fmt2-torn.zst"
expect_code 5 "... repair leaves it alone" "$CAIRN" repair "$T/fmt2-torn.zst"
check "... byte-identical" cmp -s "$T/fmt2-torn.zst" "$T/before"

# --- missing ----------------------------------------------------------------------

expect_code 3 "inspect --json of an unknown id exits 3" "$CAIRN" inspect --json 01ZZZZZZZZZZZZZZZZZZZZZZZZ
check "... status missing, error class missing" \
	pyj 'v["status"]=="missing" and v["error"]["class"]=="missing" and v["events"]==0 and v["open_turn"] is None'
expect_code 3 "inspect (text) of an unknown id exits 3" "$CAIRN" inspect 01ZZZZZZZZZZZZZZZZZZZZZZZZ
expect_code 3 "log cat of an unknown id exits 3" "$CAIRN" log cat 01ZZZZZZZZZZZZZZZZZZZZZZZZ
expect_code 3 "repair of an unknown id exits 3" "$CAIRN" repair 01ZZZZZZZZZZZZZZZZZZZZZZZZ
expect_code 3 "repair --salvage of an unknown id exits 3" "$CAIRN" repair --salvage 01ZZZZZZZZZZZZZZZZZZZZZZZZ
expect_code 3 "inspect with a data root that does not exist exits 3" "$CAIRN" --data-dir "$T/nowhere" inspect --json x
check "... and does not create it" test ! -e "$T/nowhere"
expect_code 3 "repair of a missing PATH exits 3" "$CAIRN" repair "$T/nowhere/x.zst"
mkdir -m 700 "$CAIRN_HOME/sessions/_no-cwd/empty"
expect_code 3 "a session directory without a log is not a session" "$CAIRN" inspect empty

# --- the writer lock held by another process -----------------------------------

cp "$T/ok.zst" "$f"
lock="$(dirname "$f")/session.lock"
mkfifo "$T/release"
# (flock -w, not -n: the probe below may hold the lock for an instant.)
flock -w 10 "$lock" cat "$T/release" >/dev/null &
holder=$!
for _ in $(seq 500); do flock -n "$lock" true || break; sleep 0.01; done
check "another process holds session.lock" bash -c '! flock -n "$1" true' _ "$lock"
expect_code 7 "repair while locked elsewhere exits 7 (locked)" timeout 10 "$CAIRN" repair "$id"
check "... and says so" grep -qi 'lock\|another process' <<<"$ERR"
expect_code 7 "append while locked exits 7" timeout 10 "$CAIRN" log append "$id" --expect-seq 10 <<<"$B3"
expect_code 7 "repair --json while locked exits 7" timeout 10 "$CAIRN" repair --json "$id"
check "... the log is unchanged" cmp -s "$f" "$T/ok.zst"
expect_code 0 "inspect does not need the lock" timeout 10 "$CAIRN" inspect --json "$id"
expect_code 0 "log cat does not need the lock" timeout 10 "$CAIRN" log cat "$id"
expect_code 0 "repair --salvage reads without the lock" timeout 10 "$CAIRN" repair --salvage "$T/corrupt.zst"
cp "$T/ok.zst" "$(dirname "$f")/other.zst"
expect_code 7 "append to a PATH beside the held lock exits 7" timeout 10 "$CAIRN" log append "$(dirname "$f")/other.zst" --expect-seq 10 <<<"$B3"
rm -f "$(dirname "$f")/other.zst"
: >"$T/release"
wait "$holder"
expect_code 0 "after the holder exits, repair works" "$CAIRN" repair "$id"
expect_code 0 "... and append" "$CAIRN" log append "$id" --expect-seq 13 <<<"$B3"

# --- the durable watermark (with the catalog) --------------------------------

CAIRN=$CAIRN_REAL
expect_code 0 "watermark: a new session" "$CAIRN" log append --new --no-cwd <<<"$B1"
wid=${OUT%% *}
wf=$(logfile "$wid")
append "$wid" 9 "$B2"
cp "$wf" "$T/wm-ok.zst"
truncate -s -3 "$wf"
cp "$wf" "$T/wm-cut.zst"
expect_code 4 "an acknowledged final frame cut short is corrupt, not torn" "$CAIRN" inspect --json "$wid"
check "... status corrupt, class corrupt" pyj 'v["status"]=="corrupt" and v["error"]["class"]=="corrupt"'
expect_code 4 "... repair refuses it" "$CAIRN" repair "$wid"
check "... byte-identical" cmp -s "$wf" "$T/wm-cut.zst"
expect_code 0 "... the same bytes outside the root are only torn" "$CAIRN" inspect --json "$T/wm-cut.zst"
check "... status torn" pyj 'v["status"]=="torn"'
expect_code 0 "listing stays tolerant of a corrupt session" "$CAIRN" sessions --json
check "... it is listed as corrupt" pyj 'any(s["id"]==A[0] and s["status"]=="corrupt" for s in v)' "$wid"
cp "$T/wm-ok.zst" "$wf"
head -c 64 /dev/zero >>"$wf"
expect_code 0 "zeros after the acknowledged frames (power loss) are a torn tail" "$CAIRN" inspect --json "$wid"
check "... status torn, 64 torn bytes" pyj 'v["status"]=="torn" and v["torn_bytes"]==64 and v["next_seq"]==10'
expect_code 0 "... repair cuts them" "$CAIRN" repair --json "$wid"
check "... and closes the turn" pyj 'v["cut_bytes"]==64 and len(v["appended"])==3'
expect_code 0 "... then the log is ok" "$CAIRN" inspect --json "$wid"
check "... status ok" pyj 'v["status"]=="ok" and v["next_seq"]==13'
printf 'garbage' >>"$wf"
expect_code 0 "garbage after the repaired log is a torn tail too" "$CAIRN" inspect --json "$wid"
check "... torn_bytes 7" pyj 'v["status"]=="torn" and v["torn_bytes"]==7'
expect_code 0 "... and an append cuts it first" "$CAIRN" log append "$wid" --expect-seq 13 <<<"$B3"
check "... saying so" grep -q 'torn tail' <<<"$ERR"

finish
