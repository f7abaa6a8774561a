#!/usr/bin/env bash
# test_import_cli.sh — `cairn import FILE|-` of a session exported as JSON
# Lines (docs/format.md, "Export file"). Source sessions are made for real
# (cairn -p with tools through the offline provider, a 300 KiB prompt that
# goes to a blob through the fake model server, a branch and a rewind, an
# interrupted turn), exported by export_file below, imported into another
# data root: the same `log cat`, doctor clean, the session continues;
# --new-id; every refusal with its code and nothing written under
# sessions/ nor left in the data root; --json. Needs python3.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/config/cairn" "$T/work"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
cd "$T/work" || exit 1
SRC="$T/home"   # where the sessions are made ($CAIRN_HOME)
DST="$T/dst"    # where they are imported

last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
pyl() { python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($1) else 1)"; }

# export_file ROOT ID: the export file of session ID under ROOT on stdout.
export_file() {
	"$CAIRN" --data-dir "$1" export "$2" --format json
}
# spec_export ROOT ID: the same file written from the format's text alone
# (log cat's lines, the named blobs in 512 KiB base64 chunks, the trailer),
# so that cairn export and cairn import are held to the spec, not to each other.
spec_export() {
	python3 - "$CAIRN" "$1" "$2" <<'PY'
import base64, glob, json, subprocess, sys
cairn, root, sid = sys.argv[1:4]
lines = subprocess.run([cairn, "--data-dir", root, "log", "cat", sid], check=True,
                       stdout=subprocess.PIPE).stdout.decode().splitlines()
d = glob.glob(f"{root}/sessions/*/{sid}")[0]
named = []
for l in lines:
    b = json.loads(l)["data"].get("blob")
    if b and b["sha256"] not in named:
        named.append(b["sha256"])
out = sys.stdout
for l in lines:
    out.write(l + "\n")
C = 512 * 1024
for h in named:
    data = open(f"{d}/blobs/{h}", "rb").read()
    for off in range(0, len(data), C):
        out.write(json.dumps({"blob": h, "size": len(data), "offset": off,
                              "base64": base64.b64encode(data[off:off + C]).decode()},
                             separators=(",", ":")) + "\n")
out.write(json.dumps({"cairn_export": 1, "format": 1, "events": len(lines), "blobs": len(named)},
                     separators=(",", ":")) + "\n")
PY
}
# nothing_written ROOT: no session under sessions/, nothing left in the root
# but what opening it makes.
nothing_written() {
	[ -z "$(ls -A "$1/sessions" 2>/dev/null)" ] && [ -z "$(find "$1" -maxdepth 1 -name '.import*' -o -maxdepth 1 -name '*.tmp')" ]
}
imp() { "$CAIRN" --data-dir "$DST" import "$@"; }

# --- source sessions, made for real -----------------------------------------
expect_code 0 "a turn whose shell call runs" "$CAIRN" -p "run echo from-the-shell" --approve all
expect_code 0 "a turn whose call is denied (nobody to ask)" "$CAIRN" -p "run touch nope" -c
S=$(last_session)
python3 - >"$T/big.json" <<'PY'
import json
print(json.dumps({"replies": [{"text": "a long one"}, {"text": "continued"}, {"text": "again"}, {"text": "on the copy"}]}))
PY
start_fake "$(cat "$T/big.json")"
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
head -c 307200 /dev/zero | tr '\0' 'p' >"$T/prompt.txt"
expect_code 0 "a 300 KiB prompt" "$CAIRN" -p - --session "$S" --provider openai --model m <"$T/prompt.txt"
check "... its text went to a blob" pyl 'any(e["type"]=="user/message" and e["data"].get("blob",{}).get("size")==307200 for e in L)' < <("$CAIRN" log cat "$S")
next=$("$CAIRN" inspect --json "$S" | python3 -c 'import json,sys; print(json.load(sys.stdin)["next_seq"])')
lt=$("$CAIRN" log cat "$S" | python3 -c 'import json,sys; print([json.loads(l)["turn"] for l in sys.stdin if json.loads(l)["type"]=="turn/start"][-1])')
ft=$("$CAIRN" log cat "$S" | python3 -c 'import json,sys; print([json.loads(l)["turn"] for l in sys.stdin if json.loads(l)["type"]=="turn/start"][0])')
expect_code 0 "a rewind to the first turn, a branch from it and an interrupted turn" "$CAIRN" log append "$S" --expect-seq "$next" <<EOF
{"type":"branch/rewind","data":{"to_turn":"$ft","from_leaf":"$lt","source_next_seq":$next}}
{"type":"user/message","data":{"text":"on a branch"}}
{"type":"turn/start","turn":"tb","data":{"parent_turn":"$ft","client_submit_id":"sub-1"}}
{"type":"tool/call","turn":"tb","data":{"call_id":"cb","name":"shell","args":{"command":"true"}}}
EOF
check "... the source log has every kind wanted" pyl '{"tool/call","tool/result","interaction/request","interaction/answer","branch/rewind"} <= {e["type"] for e in L}' < <("$CAIRN" log cat "$S")
export_file "$SRC" "$S" >"$T/s.jsonl"
check "cairn export writes the file the format describes, byte for byte" cmp -s "$T/s.jsonl" <(spec_export "$SRC" "$S")
check "... exported" test -s "$T/s.jsonl"

# --- the round trip ------------------------------------------------------------
expect_code 0 "import into a fresh data root" imp "$T/s.jsonl"
check "... prints the id kept" test "$OUT" = "$S"
check "... log cat is the same, line for line" cmp -s <("$CAIRN" log cat "$S") <("$CAIRN" --data-dir "$DST" log cat "$S")
H=$(python3 -c 'import json,sys; print([json.loads(l)["data"]["blob"]["sha256"] for l in open(sys.argv[1]) if "\"user/message\"" in l and "\"blob\"" in l][0])' "$T/s.jsonl")
check "... the blob is there, the same bytes" cmp -s "$T/prompt.txt" <("$CAIRN" --data-dir "$DST" log blob "$S" "$H")
check "... its re-export is the file, byte for byte" cmp -s "$T/s.jsonl" <(export_file "$DST" "$S")
expect_code 0 "... doctor is clean" "$CAIRN" --data-dir "$DST" doctor
expect_code 0 "... sessions lists it" "$CAIRN" --data-dir "$DST" sessions --json
check "... under its id" grep -q "\"$S\"" <<<"$OUT"
expect_code 0 "... it continues with -p --session (the open turn repaired first)" \
	"$CAIRN" --data-dir "$DST" -p "after the import" --session "$S" --provider openai --model m
check "... the interrupted turn was closed and the new turn answered" pyl 'any(e["type"]=="turn/end" and e["turn"]=="tb" and e["data"]["outcome"]=="interrupted" for e in L) and L[-1]["type"]=="turn/end" and L[-1]["data"]["outcome"]=="completed"' < <("$CAIRN" --data-dir "$DST" log cat "$S")
expect_code 0 "... and with -p -c in its cwd" "$CAIRN" --data-dir "$DST" -p "once more" -c --provider openai --model m
check "... -c continued the imported session" pyl 'sum(e["type"]=="turn/start" for e in L) >= 6 and L[-1]["type"]=="turn/end"' < <("$CAIRN" --data-dir "$DST" log cat "$S")

# --- refusals: each with its code, nothing written --------------------------
E="$T/empty"
refuse() { # CODE DESC FILE [ARGS]: refused into a fresh root, nothing written
	local code=$1 desc=$2 file=$3
	shift 3
	rm -rf "$E"
	expect_code "$code" "$desc" "$CAIRN" --data-dir "$E" import "$@" "$file"
	check "... nothing written under sessions/ nor left in the root" nothing_written "$E"
}
head -n -1 "$T/s.jsonl" >"$T/cut.jsonl"
refuse 4 "a file without its trailer (cut short): 4" "$T/cut.jsonl"
check "... naming the line" grep -q "line $(($(wc -l <"$T/cut.jsonl") + 1)): the file ends without its trailer" <<<"$ERR"
head -c -5 "$T/s.jsonl" >"$T/cut2.jsonl"
refuse 4 "a file cut inside a line: 4" "$T/cut2.jsonl"
python3 - "$T/s.jsonl" >"$T/tamper.jsonl" <<'PY'
import base64, json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if "blob" in o and "seq" not in o and o["offset"] == 0:
        b = bytearray(base64.b64decode(o["base64"])); b[10] ^= 1
        o["base64"] = base64.b64encode(bytes(b)).decode(); l = json.dumps(o) + "\n"
    sys.stdout.write(l)
PY
refuse 4 "a tampered blob (its digest): 4" "$T/tamper.jsonl"
check "... naming the line and the digest" grep -q "line [0-9]*: blob [0-9a-f]*: its bytes have digest" <<<"$ERR"
grep -v '^{"blob"' "$T/s.jsonl" >"$T/noblob.jsonl"
refuse 4 "a missing blob: 4" "$T/noblob.jsonl"
check "... naming the event's line" grep -q "line [0-9]*: blob [0-9a-f]*: the file holds 0 of its 307200 bytes" <<<"$ERR"
python3 - "$T/s.jsonl" >"$T/seq.jsonl" <<'PY'
import sys
for i, l in enumerate(open(sys.argv[1])):
    if i != 3:
        sys.stdout.write(l)
PY
refuse 4 "a bad seq (one event left out): 4" "$T/seq.jsonl"
check "... naming the line" grep -q "line 4" <<<"$ERR"
sed '1s/"format":1/"format":2/' "$T/s.jsonl" >"$T/f2.jsonl"
refuse 5 "a format-2 header: 5" "$T/f2.jsonl"
python3 -c '
import json,sys
L=open(sys.argv[1]).readlines(); t=json.loads(L[-1]); t["events"]+=1; L[-1]=json.dumps(t)+"\n"; sys.stdout.write("".join(L))' "$T/s.jsonl" >"$T/count.jsonl"
refuse 4 "a trailer whose count is wrong: 4" "$T/count.jsonl"
{ cat "$T/s.jsonl"; echo '{"seq":99}'; } >"$T/after.jsonl"
refuse 4 "text after the trailer: 4" "$T/after.jsonl"
rm -rf "$E"
expect_code 4 "a bad file on standard input: 4" "$CAIRN" --data-dir "$E" import - <"$T/tamper.jsonl"
check "... nothing written, nothing spooled left behind" nothing_written "$E"

"$CAIRN" --data-dir "$DST" log cat "$S" >"$T/before.txt"
expect_code 6 "an id that exists: 6" imp "$T/s.jsonl"
check "... the session is unchanged" cmp -s "$T/before.txt" <("$CAIRN" --data-dir "$DST" log cat "$S")
expect_code 0 "... trashed" "$CAIRN" --data-dir "$DST" rm "$S"
expect_code 6 "an id in the trash: 6" imp "$T/s.jsonl"
check "... nothing new under sessions/" test -z "$(find "$DST/sessions" -name "$S")"

# --- --new-id, standard input, --json ----------------------------------------
expect_code 0 "--new-id from standard input, --json" imp --new-id --json - <"$T/s.jsonl"
N=$(json id)
check "... a new id" test -n "$N" -a "$N" != "$S"
check "... --json counts events and blobs, the title and the catalog" python3 -c '
import json,sys; o=json.loads(sys.argv[1]); L=[json.loads(l) for l in open(sys.argv[2])]
ev=[x for x in L if "seq" in x]; t=[e["data"]["title"] for e in ev if e["type"]=="session/meta" and "title" in e["data"]]
sys.exit(0 if sorted(o)==["blobs","catalog","events","id","title"] and o["events"]==len(ev) and o["blobs"]==1 and o["title"]==(t[-1] if t else None) and o["catalog"]=="current" else 1)' "$OUT" "$T/s.jsonl"
"$CAIRN" --data-dir "$DST" log cat "$N" >"$T/new.txt"
check "... its header has the new id and imported_from the old one" pyl "L[0]['data']['id']=='$N' and L[0]['data']['imported_from']=={'id':'$S'}" <"$T/new.txt"
check "... no client_submit_id left" test "$(grep -c client_submit_id "$T/new.txt")" = 0
check "... nothing else changed" python3 -c '
import json,sys
A=[json.loads(l) for l in open(sys.argv[1])]; B=[json.loads(l) for l in open(sys.argv[2])]
for e in A:
    e["data"].pop("client_submit_id", None)
A[0]["data"]["id"]=B[0]["data"]["id"]; A[0]["data"]["imported_from"]=B[0]["data"]["imported_from"]
sys.exit(0 if A==B else 1)' <(grep '"seq"' "$T/s.jsonl") "$T/new.txt"
expect_code 0 "... doctor is clean" "$CAIRN" --data-dir "$DST" doctor
expect_code 0 "... it continues" "$CAIRN" --data-dir "$DST" -p "on the copy" --session "$N" --provider openai --model m
stop_fake
check "... no spooled file left in the data root" test -z "$(find "$DST" -maxdepth 1 -name '.import*')"

# --- re-batched into frames of at most 16 MiB --------------------------------
# 24 events of 900 KB in three appends (source: header + 3 frames, 21.6 MB);
# imported: the header alone, then frames filled up to FRAME_MAX_CONTENT.
for b in 1 2 3; do
	python3 -c 'import json; [print(json.dumps({"type":"user/message","data":{"text":"m%d " % i + "x" * 900000}})) for i in range(8)]' >"$T/b$b.jsonl"
done
B=$("$CAIRN" log append --new --no-cwd <"$T/b1.jsonl" | cut -d" " -f1)
"$CAIRN" log append "$B" --expect-seq 9 <"$T/b2.jsonl" >/dev/null
"$CAIRN" log append "$B" --expect-seq 17 <"$T/b3.jsonl" >/dev/null
export_file "$SRC" "$B" >"$T/big.jsonl"
frames() { zstd -lv "$(ls "$1"/sessions/*/"$2"/session.jsonl.zst)" 2>/dev/null | sed -n 's/^# Zstandard Frames: //p'; }
check "... the source has 4 frames" test "$(frames "$SRC" "$B")" = 4
expect_code 0 "a 21.6 MB session is imported" imp "$T/big.jsonl"
check "... as a header frame and two of at most 16 MiB" test "$(frames "$DST" "$B")" = 3
check "... its events the same" cmp -s <("$CAIRN" log cat "$B") <("$CAIRN" --data-dir "$DST" log cat "$B")
expect_code 2 "no FILE: usage" imp
expect_code 3 "a FILE that does not exist: 3" imp "$T/nope.jsonl"
finish
