#!/usr/bin/env bash
# SIGTERM or SIGHUP during a new session's first turn, while the answer
# streams: the terminal is given back with the partial answer and
# `resume: cairn -r ID` on the normal screen (as the man page says), the
# turn is canceled and the log keeps the partial text. Before the first
# word came, the session is still one to resume.
. "$(dirname "$0")/lib.sh"
printf '{}\n' >"$T/config/cairn/config.json"
# A slow first answer: one delta every quarter second, for a minute.
start_fake "$(python3 -c 'import json; print(json.dumps({"replies": [{"deltas": ["PARTIAL-START "] + ["w%d " % i for i in range(240)], "split": "event", "rate": 4}] * 2 + [{"stall_before_ms": 60000, "text": "never"}]}))')"
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
log_of() { "$CAIRN" --data-dir "$DATA" log cat "$1"; }
for sig in TERM HUP; do
	start "$sig" --provider openai --model m-1
	wait_for "$sig" "^ idle" >/dev/null
	keys "$sig" "first prompt $sig" Enter
	wait_for "$sig" "PARTIAL-START" 10 >/dev/null
	ID=$("$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
	kill -"$sig" "$(cairn_pid "$sig")"
	check "SIG$sig during a new session's first turn: cairn drains and exits 0" test "$(wait_exit "$sig")" = 0
	check "... the normal screen shows the partial answer" wait_for "$sig" "^PARTIAL-START w"
	check "... and how to resume the session" wait_for "$sig" "^resume: cairn -r $ID\$"
	check "... the turn is saved canceled" bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep turn/end | tail -1 | grep -q canceled"
	check "... the log keeps the partial text" bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep assistant/text | grep -q PARTIAL-START"
done

start W --provider openai --model m-1
wait_for W "^ idle" >/dev/null
keys W "no word yet" Enter
ID=""
for _ in $(seq 100); do
	ID=$("$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
	log_of "$ID" 2>/dev/null | grep -q '"text":"no word yet"' && break
	sleep 0.05
done
kill -TERM "$(cairn_pid W)"
check "SIGTERM before the first word: cairn exits 0" test "$(wait_exit W)" = 0
check "... the normal screen says how to resume the session" wait_for W "^resume: cairn -r $ID\$"
stop_fake
finish
