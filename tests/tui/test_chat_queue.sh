#!/usr/bin/env bash
# Queued prompts after a canceled turn wait for the user: Enter on an empty
# composer sends the first, Alt-Up pulls the last back into the composer
# (never over unsent text), Alt-D deletes it. Also Ctrl-F finds a turn, and
# a message or an answer's code block selected with Shift-Up is what Alt-C
# copies (to clipboard.txt).
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 30}}}\n' >"$T/config/cairn/config.json"
last_id() { "$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
prompts() { "$CAIRN" --data-dir "$DATA" log cat "$(last_id)" | python3 -c 'import json,sys; print("|".join(json.loads(l)["data"]["text"] for l in sys.stdin if "\"user/message\"" in l))'; }
start q
wait_for q "^ idle" >/dev/null
keys q "first turn" Enter
wait_for q "^ streaming" >/dev/null
keys q "second waits" Enter
keys q "third waits" Enter
wait_for q "queued 2" >/dev/null
keys q Escape
check "after a cancel the queued prompts wait: idle with queued 2" wait_for q "^ idle \| queued 2"
sleep 0.5
check "... nothing was dispatched" test "$(prompts)" = "first turn"
keys q M-Up
check "Alt-Up pulls the last one back into the composer" wait_for q "^> third waits"
check "... and out of the queue" wait_for q "^ idle \| queued 1"
keys q C-u
keys q M-d
check "Alt-D deletes the waiting one" wait_for q "^ idle \| removed from the queue"
keys q "again" Enter
wait_for q "^ streaming" >/dev/null
keys q "after again" Enter
wait_for q "queued 1" >/dev/null
keys q Escape
wait_for q "^ idle \| queued 1" >/dev/null
keys q Enter
check "Enter on an empty composer sends the first waiting prompt" wait_for q "^ (waiting|streaming)"
wait_for q "^ idle" 30 >/dev/null
check "... the log holds the prompts in their order" test "$(prompts)" = "first turn|again|after again"

printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
start s -c
wait_for s "^ idle" >/dev/null
keys s C-f
keys s "first turn" Enter
check "Ctrl-F finds a turn: the view goes to it" wait_for s "^> first turn"
keys s Escape
keys s End
keys s S-Up
check "Shift-Up selects the last answer's code block first" wait_for s "code block 1/1 selected"
keys s M-c
check "Alt-C copies the code block" wait_for s "copied the selected code"
printf 'export ANTHROPIC_API_KEY=...   # or OPENAI_API_KEY\ncairn config                   # the provider cairn will use\n' >"$T/code"
check "... clipboard.txt holds exactly its code" cmp -s "$T/code" "$DATA/clipboard.txt"
keys s S-Up
check "Shift-Up again: the whole answer" wait_for s "the answer selected"
keys s S-Up
check "... then a prompt (marked)" wait_for s "^= "
keys s M-c
check "Alt-C copies it: said on the status line" wait_for s "copied the selected message"
check "... and clipboard.txt holds a prompt of the session" grep -qx "after again" "$DATA/clipboard.txt"
finish
