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

# export_file ROOT ID: the export file of session ID under ROOT on stdout,
# exactly per the format: the `log cat` lines, then each blob they name
# (once, in the order first named) in base64 chunks of at most 512 KiB,
# then the trailer. One function, so that `cairn export` can replace it.
export_file() {
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
print(json.dumps({"replies": [{"text": "a long one"}, {"text": "continued"}, {"text": "again"}]}))
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
