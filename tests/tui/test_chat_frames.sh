#!/usr/bin/env bash
# What the chat screen writes to the terminal while an answer streams
# (tmux pipe-pane records the pane's output bytes from the first frame
# on): the screen is never cleared while streaming; the bytes written
# stay a small multiple of the characters streamed (differential updates,
# not redraws). Also `cairn -r PREFIX` opens a session by a unique prefix,
# one that another cairn holds opens view-only, and so does a damaged one.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 5}}}\n' >"$T/config/cairn/config.json"
start f
wait_for f "^ idle" >/dev/null # the first frame is up: record from here
TM pipe-pane -t f -o "cat >>'$T/bytes'"
keys f "stream for the record" Enter
check "the answer streams to its end" wait_for f "cairn config" 30
wait_for f "^ idle" >/dev/null
cp "$T/bytes" "$T/streamed"
keys f C-d
wait_exit f >/dev/null
ID=$("$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
CHARS=$("$CAIRN" --data-dir "$DATA" log cat "$ID" |
	python3 -c 'import json,sys; print(sum(len(json.loads(l)["data"]["text"]) for l in sys.stdin if "\"assistant/text\"" in l))')
check "the answer has text ($CHARS characters)" test "$CHARS" -gt 500
# A full clear is ESC [2J, or (as tmux's terminal type says it) home then
# clear to the end: ESC [H ESC [J.
CLEARS=$(python3 -c 'import sys; b = open(sys.argv[1], "rb").read(); print(b.count(b"\x1b[2J") + b.count(b"\x1b[H\x1b[J"))' "$T/streamed")
check "the screen was never cleared while streaming ($CLEARS)" test "$CLEARS" -eq 0
BYTES=$(wc -c <"$T/streamed")
check "bytes written: $BYTES for $CHARS characters streamed (at most 12 per character)" \
	test "$BYTES" -le $((CHARS * 12))

start r -r "${ID:0:12}"
check "cairn -r with a unique id prefix opens that session" wait_for r "cairn config"
keys r C-d
wait_exit r >/dev/null
start v -r "$ID"
wait_for v "^ idle" >/dev/null
start w -r "$ID"
check "a session open in another cairn opens view-only, said on the status line" \
	wait_for w "^ view-only: the session is open in another cairn"
check "... its transcript is shown" wait_for w "cairn config"
keys w "not to be sent" Enter
check "... Enter sends nothing, and says so" wait_for w "nothing is sent"
keys w C-c
keys w C-c
wait_exit w >/dev/null
check "... the log did not change" bash -c "[ \$('$CAIRN' --data-dir '$DATA' log cat $ID | grep -c user/message) = 1 ]"
keys v C-d
wait_exit v >/dev/null
# A log damaged before its end: shown as far as it is valid, with its
# class, and never written.
append() { "$CAIRN" --data-dir "$DATA" log append "$@"; }
turn() { printf '{"type":"turn/start","turn":"%s","data":{}}\n{"type":"user/message","turn":"%s","data":{"text":"%s"}}\n{"type":"turn/end","turn":"%s","data":{"outcome":"completed"}}\n' "$1" "$1" "$2" "$1"; }
DID=$(turn t1 "the first prompt" | append --new --cwd "$T/work" | cut -d' ' -f1)
turn t2 "the second prompt" | append "$DID" --expect-seq 4 >/dev/null
turn t3 "the third prompt" | append "$DID" --expect-seq 7 >/dev/null
DLOG=$(find "$DATA/sessions" -path "*$DID/session.jsonl.zst")
# One byte flipped in the middle of the third frame (t2's batch).
python3 - "$DLOG" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
starts = [i for i in range(len(b) - 3) if b[i:i + 4] == b'\x28\xb5\x2f\xfd']
b[(starts[2] + starts[3]) // 2] ^= 0xff
open(p, 'wb').write(b)
PY
SUM=$(sha256sum <"$DLOG")
start d -r "$DID"
check "a damaged log opens view-only, its class said" wait_for d "^ view-only: the log is corrupt: frame at offset"
check "... what is valid is shown" wait_for d "the first prompt"
check "... and nothing past the damage" bash -c "! tmux -L '$SOCK' capture-pane -p -t d | grep -q 'the third prompt'"
keys d "not to be written" Enter
keys d C-c
keys d C-c
check "... Ctrl-C twice quits as usual" test "$(wait_exit d)" = 0
check "... and the log is untouched" test "$(sha256sum <"$DLOG")" = "$SUM"

start x -r NOSUCHSESSION
check "cairn -r with an unknown id: exit 3, said" test "$(wait_exit x)" = 3
check "... the message names it" wait_for x "NOSUCHSESSION"
finish
