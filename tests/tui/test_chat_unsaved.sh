#!/usr/bin/env bash
# A prompt sent while the session is unsaved never vanishes. The fake
# model server damages the log while the first turn runs (a byte appended
# behind the writer's back, before it answers): the turn's saves fail and
# the session is unsaved, for good. A prompt sent then cannot start (its
# save fails behind the failed recovery): it comes back into the composer
# with its error, is never lost, and /save says it cannot recover.
. "$(dirname "$0")/lib.sh"
printf '{}\n' >"$T/config/cairn/config.json"
printf '{"replies": [{"text": "first answer"}, {"text": "never asked"}]}' >"$T/script.json"
python3 "$FAKE" --script "$T/script.json" --record "$T/record.jsonl" --port-file "$T/port" \
	--before-reply "for f in \$(find '$DATA' -name session.jsonl.zst); do printf x >>\"\$f\"; done" \
	>/dev/null 2>&1 &
FAKE_PID=$!
trap 'kill $FAKE_PID 2>/dev/null; cleanup_tmux; rm -rf "$T"' EXIT
for _ in $(seq 200); do [ -s "$T/port" ] && break; sleep 0.05; done
export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$T/port")/v1" OPENAI_API_KEY=sk-test
start u
wait_for u "^ idle" >/dev/null
keys u "first prompt" Enter
check "the log damaged during the turn: the session is unsaved" wait_for u "unsaved" 20
wait_for u "^ idle" 20 >/dev/null
keys u "second prompt" Enter
check "a prompt sent while unsaved is not lost: it says why it was not sent" \
	wait_for u "not sent: " 20
check "... and the prompt is back in the composer" wait_for u "^> second prompt"
check "... the model was asked once only" test "$(wc -l <"$T/record.jsonl")" = 1
keys u C-u
keys u "third prompt" Enter
check "a prompt sent again is not lost either" wait_for u "^> third prompt" 20
keys u C-u
keys u "/save" Enter
check "/save cannot recover it: it says why, and the session stays unsaved" \
	wait_for u "^ idle \| unsaved \(/save retries\) \| (a save failed|session)" 20
keys u C-c C-c
check "cairn exits" test "$(wait_exit u 20)" != timeout
finish
