#!/usr/bin/env bash
# cairn export: JSON Lines that carry a session whole (its events as `log
# cat` prints them, every blob they name in base64 chunks of at most
# 512 KiB, a trailer with the counts), and Markdown of the active path
# (golden files from a log crafted with fixed times: tests/golden/). The
# sessions are made for real (`cairn -p` against the fake model server,
# tool calls run and denied, a 300 KiB and a 1.2 MiB prompt in blobs, a
# branch by `log append`, an interrupted turn closed by repair); then a
# torn log (its valid prefix, exit 0 and a warning), a corrupt one (4), an
# unsupported one (5), a missing one (3); -o writes 0600 through a rename.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
GOLDEN=$PWD/tests/golden
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/work"
cd "$T/work" || exit 1

events() { "$CAIRN" log cat "$1"; }
last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
logfile() { local m=("$CAIRN_HOME"/sessions/*/"$1"/session.jsonl.zst); [ -f "${m[0]}" ] && echo "${m[0]}"; }
# frame FILE -- LINE...: append the lines as one zstd frame (as cairn writes).
frame() {
	local f=$1
	shift 2
	printf '%s\n' "$@" >"$T/frame.txt"
	zstd -q -c --check --content-size "$T/frame.txt" >>"$f"
}
# jsonl_check FILE SESSION: the export's structure against the log and the blobs.
jsonl_check() {
	python3 - "$1" "$2" "$CAIRN_HOME" <<'EOF'
import base64, glob, hashlib, json, subprocess, sys, os
path, sid, home = sys.argv[1:4]
lines = open(path, "rb").read().split(b"\n")
assert lines[-1] == b"", "ends with a newline"
lines = lines[:-1]
cat = subprocess.run([os.environ["CAIRN"], "log", "cat", sid], capture_output=True, check=True).stdout.split(b"\n")[:-1]
assert lines[:len(cat)] == cat, "the event lines are log cat's, byte for byte"
rest = [json.loads(l) for l in lines[len(cat):]]
trailer = rest.pop()
assert trailer == {"cairn_export": 1, "format": 1, "events": len(cat), "blobs": len({b["blob"] for b in rest})}, trailer
named = []
for l in cat:
    b = json.loads(l)["data"].get("blob")
    if b and b["sha256"] not in [n["sha256"] for n in named]:
        named.append(b)
assert [n["sha256"] for n in named] == list(dict.fromkeys(b["blob"] for b in rest)), "every named blob once, in order"
d = glob.glob(f"{home}/sessions/*/{sid}/blobs")[0]
for n in named:
    chunks = [b for b in rest if b["blob"] == n["sha256"]]
    data = b""
    for c in chunks:
        assert set(c) == {"blob", "size", "offset", "base64"}
        assert c["offset"] == len(data) and c["size"] == n["size"]
        piece = base64.b64decode(c["base64"], validate=True)
        assert len(piece) <= 512 * 1024
        data += piece
    assert data == open(f"{d}/{n['sha256']}", "rb").read() and hashlib.sha256(data).hexdigest() == n["sha256"]
assert all(len(l) < 1024 * 1024 for l in lines), "every line under the log's 1 MiB limit"
print(len(cat), len(named), max(len([b for b in rest if b["blob"] == n["sha256"]]) for n in named) if named else 0)
EOF
}

# --- a session made for real ------------------------------------------------
head -c 307200 /dev/urandom | base64 -w 100 >"$T/big.txt"   # ~400 KiB of text
head -c 300000 "$T/big.txt" >"$T/p300.txt"
head -c 921600 /dev/urandom | base64 -w 100 >"$T/huge.txt"  # ~1.2 MiB
start_fake '{"replies":[{"text":"A1"},{"tool_calls":[{"id":"c1","name":"shell","arguments":"{\"command\":\"echo from-the-shell\"}"}]},{"text":"ran it"},{"tool_calls":[{"id":"c2","name":"shell","arguments":"{\"command\":\"touch nope\"}"}]},{"text":"was denied"},{"text":"A4"}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
expect_code 0 "a 300 KiB prompt" "$CAIRN" -p - --provider openai --model m-1 <"$T/p300.txt"
S=$(last_session)
expect_code 0 "a tool call that runs" "$CAIRN" -p "run it" --session "$S" --provider openai --model m-1 --approve all
expect_code 0 "a tool call denied (nobody to ask)" "$CAIRN" -p "run another" --session "$S" --provider openai --model m-1
expect_code 0 "a 1.2 MiB prompt" "$CAIRN" -p - --session "$S" --provider openai --model m-1 <"$T/huge.txt"
stop_fake
next=$(events "$S" | python3 -c 'import json,sys; print(max(json.loads(l)["seq"] for l in sys.stdin) + 1)')
expect_code 0 "a rewind to the first turn and an open turn, by log append" "$CAIRN" log append "$S" --expect-seq "$next" <<EOF
{"type":"branch/rewind","data":{"to_turn":"t1","from_leaf":"t4","source_next_seq":$next}}
{"type":"turn/start","turn":"t5","data":{"parent_turn":"t1"}}
{"type":"user/message","turn":"t5","data":{"text":"left open"}}
EOF
expect_code 0 "repair closes the open turn as interrupted" "$CAIRN" repair "$S"

expect_code 0 "export --format json" "$CAIRN" export --format json "$S"
check "... nothing on stderr" test -z "$ERR"
"$CAIRN" export --format json "$S" >"$T/s.jsonl" 2>/dev/null
counts=$(jsonl_check "$T/s.jsonl" "$S")
check "... events as log cat prints them, blobs whole in chunks, the trailer's counts ($counts)" test -n "$counts"
check "... two blobs, the largest in three chunks" test "${counts#* }" = "2 3"

expect_code 0 "export (Markdown by default)" "$CAIRN" export "$S"
"$CAIRN" export "$S" >"$T/s.md" 2>/dev/null
check "... the notice on stderr says tool output is included" grep -q "includes tool output" <<<"$ERR"
check "... the 300 KiB prompt whole" python3 -c 'import sys; sys.exit(0 if open(sys.argv[1]).read().rstrip("\n") in open(sys.argv[2]).read() else 1)' "$T/p300.txt" "$T/s.md"
check "... the active path only: turns 1 and 5, not the rewound branch" \
	python3 -c 'import sys; m=open(sys.argv[1]).read(); sys.exit(0 if m.count("\n## Turn ")==2 and "from-the-shell" not in m and "left open" in m else 1)' "$T/s.md"
check "... the interrupted turn marked" grep -q "^\*This turn was interrupted" "$T/s.md"
expect_code 0 "after a checkout of t4: the tool turns" "$CAIRN" log append "$S" --expect-seq "$(($(events "$S" | wc -l)))" \
	<<<'{"type":"branch/rewind","data":{"to_turn":"t4","from_leaf":"t5"}}'
"$CAIRN" export "$S" >"$T/t4.md" 2>/dev/null
check "... the call that ran, with its output" grep -q "^from-the-shell" "$T/t4.md"
check "... the denied call marked" grep -q '^\*\*Result\*\* of `.*`: \*\*denied\*\*' "$T/t4.md"
check "... the 1.2 MiB prompt whole" grep -qF "$(tail -c 200 "$T/huge.txt" | tail -n 1)" "$T/t4.md"
expect_code 0 "--no-tool-output" "$CAIRN" export --no-tool-output "$S"
check "... no notice, and no output" test -z "$ERR" -a "$(grep -c '^from-the-shell' <<<"$OUT")" = 0
check "... the call is still shown" grep -q "echo from-the-shell" <<<"$OUT"

# --- -o FILE ----------------------------------------------------------------
umask 022
"$CAIRN" export --format json "$S" >"$T/s.jsonl" 2>/dev/null
expect_code 3 "-o FILE in a missing directory: 3" "$CAIRN" export --format json -o "$T/out/s.jsonl" "$S"
mkdir -p "$T/out"
expect_code 0 "-o FILE in an existing directory" "$CAIRN" export --format json -o "$T/out/s.jsonl" "$S"
check "... mode 0600" test "$(stat -c %a "$T/out/s.jsonl")" = 600
check "... the same bytes as to stdout" cmp -s "$T/out/s.jsonl" "$T/s.jsonl"
check "... no temporary file left" test "$(ls -A "$T/out")" = s.jsonl
printf 'old' >"$T/out/s.md" && chmod 644 "$T/out/s.md"
expect_code 0 "-o over an existing file" "$CAIRN" export -o "$T/out/s.md" "$S"
check "... replaced, mode 0600, no temporary file" \
	test "$(head -c 2 "$T/out/s.md")" = "# " -a "$(stat -c %a "$T/out/s.md")" = 600 -a "$(ls -A "$T/out" | wc -l)" = 2

# --- torn, corrupt, unsupported, missing, usage -----------------------------
expect_code 0 "a second session" "$CAIRN" log append --new --no-cwd <<<'{"type":"session/meta","data":{"title":"torn"}}'
S2=${OUT%% *}
expect_code 0 "... a second frame" "$CAIRN" log append "$S2" --expect-seq 2 <<<'{"type":"session/meta","data":{"title":"still torn"}}'
"$CAIRN" export --format json "$S2" >"$T/s2.jsonl"
L2=$(logfile "$S2")
len=$(stat -c %s "$L2")
printf '\x28\xb5\x2f\xfd\x24\x40\x01' >>"$L2"
expect_code 0 "a torn log: exit 0" "$CAIRN" export --format json "$S2"
check "... its valid prefix, the same as before the tear" test "$OUT" = "$(cat "$T/s2.jsonl")"
check "... a warning naming the cut" grep -q "warning: the log is torn at byte $len (7 bytes after it ignored)" <<<"$ERR"
expect_code 0 "... Markdown too" "$CAIRN" export "$S2"
check "... with the warning" grep -q "torn at byte $len" <<<"$ERR"
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0xff]))' "$L2" $((len - 6))
expect_code 4 "a corrupt log: 4" "$CAIRN" export --format json "$S2"
check "... nothing on stdout" test -z "$OUT"
expect_code 4 "... Markdown: 4" "$CAIRN" export "$S2"
U="$CAIRN_HOME/sessions/_no-cwd/fmt2"
mkdir -p -m 700 "$U"
frame "$U/session.jsonl.zst" -- '{"seq":0,"t":1,"type":"session/header","data":{"format":2,"id":"fmt2","created_at":1,"cwd":null}}'
chmod 600 "$U/session.jsonl.zst"
expect_code 5 "an unsupported log (format 2): 5" "$CAIRN" export --format json fmt2
expect_code 3 "a missing session: 3" "$CAIRN" export 01ZZZZZZZZZZZZZZZZZZZZZZZZ
expect_code 3 "a missing file: 3" "$CAIRN" export "$T/nope/session.jsonl.zst"
expect_code 2 "an unknown format: 2" "$CAIRN" export --format html "$S"
expect_code 2 "--reasoning with json: 2" "$CAIRN" export --format json --reasoning "$S"
# A blob a durable event names that is gone: committed content lost, 4.
h=$(events "$S" | python3 -c 'import json,sys; print([json.loads(l)["data"]["blob"]["sha256"] for l in sys.stdin if "blob" in json.loads(l)["data"]][0])')
mv "$(dirname "$(logfile "$S")")/blobs/$h" "$T/blob.saved"
expect_code 4 "a named blob missing: 4" "$CAIRN" export --format json "$S"
check "... naming it" grep -q "$h" <<<"$ERR"
mv "$T/blob.saved" "$(dirname "$(logfile "$S")")/blobs/$h"

# --- Markdown golden files ----------------------------------------------------
G="$T/golden"
mkdir -p -m 700 "$G/blobs"
head -n 1 "$GOLDEN/export_session.jsonl" >"$T/h.txt"
frame "$G/session.jsonl.zst" -- "$(cat "$T/h.txt")"
mapfile -t rest < <(tail -n +2 "$GOLDEN/export_session.jsonl")
frame "$G/session.jsonl.zst" -- "${rest[@]}"
cp "$GOLDEN/export_blob.txt" "$G/blobs/$(sha256sum "$GOLDEN/export_blob.txt" | cut -d' ' -f1)"
expect_code 0 "Markdown of a crafted log" "$CAIRN" export "$G/session.jsonl.zst"
"$CAIRN" export "$G/session.jsonl.zst" >"$T/g.md" 2>/dev/null
check "... equals tests/golden/export_default.md" diff -u "$GOLDEN/export_default.md" "$T/g.md"
check "... the title's escape sequences shown inert" test "$(grep -c $'\e' <<<"$OUT")" = 0 -a "$(head -n 1 <<<"$OUT")" = '# Fences ^[]0;owned^G and ^[[31mred'
check "... fences longer than any backtick run of the turn" grep -qx '`````json' <<<"$OUT"
check "... deterministic" test "$("$CAIRN" export "$G/session.jsonl.zst" 2>/dev/null)" = "$OUT"
expect_code 0 "--reasoning --no-tool-output" "$CAIRN" export --reasoning --no-tool-output "$G/session.jsonl.zst"
"$CAIRN" export --reasoning --no-tool-output "$G/session.jsonl.zst" >"$T/g.md" 2>/dev/null
check "... equals tests/golden/export_reasoning.md" diff -u "$GOLDEN/export_reasoning.md" "$T/g.md"
check "... no notice" test -z "$ERR"

# --- to a terminal ------------------------------------------------------------
E="$T/esc"
mkdir -p -m 700 "$E"
frame "$E/session.jsonl.zst" -- '{"seq":0,"t":1,"type":"session/header","data":{"format":1,"id":"01J0B8Z2T4K7M9Q3W5X6Y8Z0AC","created_at":1,"cwd":null}}'
frame "$E/session.jsonl.zst" -- '{"seq":1,"t":2,"type":"turn/start","turn":"t1","data":{"parent_turn":null}}' \
	'{"seq":2,"t":2,"type":"user/message","turn":"t1","data":{"text":"clear \u001b[2J the screen"}}'
expect_code 0 "an answer with an escape sequence, into a pipe" "$CAIRN" export "$E/session.jsonl.zst"
check "... the exact text" grep -qF $'clear \e[2J the screen' <<<"$OUT"
if command -v script >/dev/null; then
	script -qec "$CAIRN export $E/session.jsonl.zst" /dev/null >"$T/tty.out" 2>&1
	check "on a terminal: shown inert, no escape byte reaches it" \
		test "$(grep -c $'\e' "$T/tty.out")" = 0 -a "$(grep -c 'clear ^\[\[2J the screen' "$T/tty.out")" = 1
fi
finish
