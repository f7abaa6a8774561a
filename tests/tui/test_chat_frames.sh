#!/usr/bin/env bash
# What the chat screen writes to the terminal while an answer streams
# (tmux pipe-pane records the pane's output bytes from the first frame
# on): the screen is never cleared while streaming; the bytes written
# stay a small multiple of the characters streamed (differential updates,
# not redraws). Also `cairn -r PREFIX` opens a session by a unique prefix,
# and one that another cairn holds opens view-only.
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
start x -r NOSUCHSESSION
check "cairn -r with an unknown id: exit 3, said" test "$(wait_exit x)" = 3
check "... the message names it" wait_for x "NOSUCHSESSION"
finish
