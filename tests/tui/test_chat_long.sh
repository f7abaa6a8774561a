#!/usr/bin/env bash
# A long session opens at its end and scrolls back to its start: the end
# is on the screen first, the model holds only the last turns, and earlier
# ones are read from the log as the view reaches them (Home, PgUp, the
# mouse wheel), the view staying on the turn it showed. A prompt sent
# after paging back runs as usual; another cairn holding the session shows
# its end view-only, and a page back over damage says so, classified.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}, "bell": false}\n' >"$T/config/cairn/config.json"
TURNS=3000
CHUNK=100
# Four events a turn, the answer wrapping on the screen and as hard to
# compress as prose; a frame per 100 turns, as batches make them.
gen() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		srand(a)
		for (i = a; i <= b; i++) {
			noise = ""
			for (k = 0; k < 40; k++)
				noise = noise sprintf("%04x", int(rand() * 65536))
			printf "{\"type\":\"turn/start\",\"turn\":\"t%d\",\"data\":{}}\n", i
			printf "{\"type\":\"user/message\",\"turn\":\"t%d\",\"data\":{\"text\":\"prompt #%d.\"}}\n", i, i
			printf "{\"type\":\"assistant/text\",\"turn\":\"t%d\",\"data\":{\"text\":\"answer #%d. %s\"}}\n", i, i, noise
			printf "{\"type\":\"turn/end\",\"turn\":\"t%d\",\"data\":{\"outcome\":\"completed\"}}\n", i
		}
	}'
}
gen 1 $CHUNK >"$T/turns.jsonl"
expect_code 0 "a long session" "$CAIRN" --data-dir "$DATA" log append --new --cwd "$T/work" <"$T/turns.jsonl"
id=${OUT%% *}
bad=0
for ((a = CHUNK + 1; a <= TURNS; a += CHUNK)); do
	gen $a $((a + CHUNK - 1)) | "$CAIRN" --data-dir "$DATA" log append "$id" --expect-seq $((4 * (a - 1) + 1)) >/dev/null || bad=1
done
check "... of $TURNS turns in $((TURNS / CHUNK)) frames" test $bad = 0

start long -r "$id"
check "it opens at its end" wait_for long "answer #$TURNS\."
check "... and becomes ready" wait_for long "^ idle"
screen long | grep -q "^> prompt #1\." && not_ok "the first turn is not on the screen" || ok "the first turn is not on the screen"

# Home: the top of what is held, then earlier turns read in, until the
# first; each read keeps the view on the turn it showed.
top_prompt() { screen "${1:-long}" | grep -oE "^> prompt #[0-9]+\." | head -1 | tr -dc 0-9; }
keys long Home
check "Home with earlier turns: they are read in" wait_for long "earlier turns loaded|loading earlier turns"
sleep 0.3
first=$(top_prompt)
check "... the view stays on the turn at its top (#$first), not the end" test -n "$first" -a "${first:-0}" -lt $((TURNS - 10))
pages=1
for i in $(seq 20); do
	screen long | grep -q "^> prompt #1\." && break
	keys long Home
	pages=$((pages + 1))
	wait_for long "earlier turns loaded" 5 >/dev/null
	sleep 0.2
done
check "Home again and again reaches the session's first turn" wait_for long "^> prompt #1\."
check "... and says the whole session is read" wait_for long "the whole session"
keys long End
check "... in more than one read ($pages)" test $pages -ge 2
check "End: the end again" wait_for long "answer #$TURNS\."

# PgUp across the first turn held pages too (a new screen, from the end).
keys long C-d
wait_exit long >/dev/null
start long2 -r "$id"
wait_for long2 "^ idle" >/dev/null
for i in $(seq 150); do
	keys long2 PPage
done
check "PgUp past the turns held reads earlier ones" wait_for long2 "earlier turns loaded"

# The mouse wheel: button 4 and 5 reports, as tmux sends them to a pane
# whose TERM (screen) asks for X10 reports.
keys long2 End
wait_for long2 "answer #$TURNS\." >/dev/null
for i in $(seq 8); do
	TM send-keys -t long2 -l $'\033[M`**'
done
check "the wheel scrolls back: the end leaves the screen" \
	bash -c "for i in \$(seq 100); do tmux -L '$SOCK' capture-pane -p -t long2 | grep -q 'answer #$TURNS\.' || exit 0; sleep 0.05; done; exit 1"
for i in $(seq 8); do
	TM send-keys -t long2 -l $'\033[Ma**'
done
check "... and forward to it again" wait_for long2 "answer #$TURNS\."

# Held by that cairn: another shows the end, view-only.
start viewer -r "$id"
check "another cairn shows the end view-only" wait_for viewer "view-only"
check "... the end on its screen" wait_for viewer "answer #$TURNS\."
for i in $(seq 20); do
	screen viewer | grep -q "^> prompt #1\." && break
	keys viewer Home
	sleep 0.3
done
check "... and pages back to the first turn too" wait_for viewer "^> prompt #1\."
keys viewer C-d
check "... and quits cleanly" test "$(wait_exit viewer)" = 0

# Damage far before the end a viewer shows (in the first turns' frame):
# the end is shown, and the page back that reaches the damage says so,
# classified, on a status line wide enough to show it.
LOG=$(find "$DATA/sessions" -path "*$id/session.jsonl.zst")
python3 - "$LOG" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
starts = [i for i in range(len(b) - 3) if b[i:i + 4] == b'\x28\xb5\x2f\xfd']
b[(starts[1] + starts[2]) // 2] ^= 0xff  # frame 1: turns 1-100
open(p, 'r+b').write(b)
PY
start viewer2 -r "$id"
TM resize-window -t viewer2 -x 200 -y 24
check "a viewer of a log damaged far before its end shows the end" wait_for viewer2 "answer #$TURNS\."
said=0
for i in $(seq 20); do
	keys viewer2 Home
	wait_for viewer2 "cannot read earlier turns: the log is damaged at byte" 2 >/dev/null && { said=1; break; }
done
check "... a page back over the damage says why, classified" test $said = 1
check "... and the view-only screen stays" wait_for viewer2 "view-only"
keys viewer2 C-d
check "... and it quits cleanly" test "$(wait_exit viewer2)" = 0

# A prompt after paging back runs on the same session.
keys long2 "after the paging" Enter
check "a prompt sent after paging back is answered" wait_for long2 "after the paging"
check "... and the screen is idle again" wait_for long2 "^ idle"

keys long2 C-d
check "both quit" test "$(wait_exit long2)" = 0
finish
