#!/usr/bin/env bash
# The status line names the session as `cairn sessions` does: its own
# title, else its first prompt; "new session" only before anything was
# sent. The help screen (F1) at 100 columns: a description too long for
# its line goes on indented under the description column.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
"$CAIRN" --data-dir "$DATA" -p "hello title prompt" >/dev/null 2>"$T/p.err"
ID=$("$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')

start a
check "a new session: the status line says new session" wait_for a "^ idle \| new session \|"
keys a "first words here" Enter
check "... once its first prompt is sent, it is called by it" wait_for a "^ idle \| first words here \|"
keys a C-d
wait_exit a >/dev/null

start b -r "$ID"
check "a resumed session without a title of its own: called by its first prompt" wait_for b "^ idle \| hello title prompt \|"
keys b C-d
wait_exit b >/dev/null
"$CAIRN" --data-dir "$DATA" rename "$ID" "Renamed Session" >/dev/null 2>"$T/rename.err" || cat "$T/rename.err"
start c -r "$ID"
check "... with its own title: called by it" wait_for c "^ idle \| Renamed Session \|"

TM resize-window -t c -x 100 -y 30 2>/dev/null || TM resize-pane -t c -x 100 -y 30
keys c F1
check "F1 shows the help" wait_for c "^    Down +move down a row"
# The line after Down's: the rest of its description, under the column
# the description starts at (the screen's margin of 2, then 2 + 22 + 1 cells).
after_down() {
	screen c | python3 -c '
import re, sys
lines = sys.stdin.read().split("\n")
i = next(k for k, l in enumerate(lines) if re.match(r"    Down +move down a row", l))
col = lines[i].index("move down")
nxt = lines[i + 1]
sys.exit(0 if col == 27 and re.match(r" {27}\S", nxt) and len(lines[i]) <= 100 else 1)'
}
check "... a wrapped description goes on under its column at 100 columns" after_down
finish
