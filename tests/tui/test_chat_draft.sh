#!/usr/bin/env bash
# The composer's draft survives a restart: saved per project through the
# persistence FIFO a moment after the last edit and on quit, shown again
# by the next cairn in the same directory, gone once sent.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
start a
wait_for a "^ idle" >/dev/null
keys a "unsent words"
keys a C-c
keys a C-c
check "quit with an unsent prompt in the composer" test "$(wait_exit a)" = 0
check "... the draft is in the data root's drafts/" bash -c "grep -rq 'unsent words' '$DATA/drafts'"
start b
check "the next cairn in the directory shows the draft in the composer" wait_for b "^> unsent words"
keys b " now sent" Enter
check "... it can be sent" wait_for b "^ idle" 
sleep 1.5 # the draft's save follows the last edit
keys b C-d
wait_exit b >/dev/null
start c
wait_for c "^ idle" >/dev/null
check "once sent, the draft is gone" wait_for c "^>$"
keys c "kept for work"
keys c C-c
keys c C-c
wait_exit c >/dev/null
mkdir -p "$T/other"
TM new-window -d -n d "cd '$T/other' && '$CAIRN' --data-dir '$DATA'"
wait_for d "^ idle" >/dev/null
check "another directory has its own draft: none" wait_for d "^>$"
start e
check "... while this one keeps its own" wait_for e "^> kept for work"
finish
