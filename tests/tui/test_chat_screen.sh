#!/usr/bin/env bash
# The chat screen end to end in tmux, on the offline provider: keys typed
# before the first frame, a turn streamed, the status line, quitting and
# `cairn -c` showing the same transcript, a prompt queued during a turn,
# Esc canceling, approvals allowed and denied (nothing runs before the
# answer), a resize while streaming, SIGTERM draining, SIGKILL while
# streaming then the interrupted turn on resume.
. "$(dirname "$0")/lib.sh"
pace() { printf '{"providers": {"offline": {"pace_ms": %s}}}\n' "$1" >"$T/config/cairn/config.json"; }
log_of() { "$CAIRN" --data-dir "$DATA" log cat "$1"; }
last_id() { "$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }

pace 0
start a
keys a "hello screen" Enter # typed at once: before the first frame, or just after
check "type-ahead: the prompt typed before the screen was up is sent: the composer is empty again" wait_for a "^>$"
check "... the offline answer streams in, the view following its end" wait_for a "cairn config"
check "... the status line names the offline model and says idle" wait_for a "^ idle \| .*offline \(built-in model, no network\)"
keys a Home
check "... Home shows the start: the prompt" wait_for a "^> hello screen"
keys a End
keys a C-d
check "Ctrl-D on an empty composer quits (exit 0)" test "$(wait_exit a)" = 0
check "... the normal screen says how to resume" wait_for a "resume: cairn -r "
ID=$(last_id)
check "... the turn is saved: its log ends with turn/end completed" \
	bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | tail -1 | grep -q '\"outcome\":\"completed\"'"

pace 30
start b -c
check "cairn -c shows the same transcript: its answer" wait_for b "cairn config"
keys b Home
check "... and its prompt" wait_for b "^> hello screen"
keys b End
keys b "one" Enter
check "a turn streams" wait_for b "^ streaming"
keys b "two" Enter
check "Enter during a turn queues the prompt: the status line says queued 1" wait_for b "queued 1"
check "... the queue is shown above the composer" wait_for b "queued: two"
check "... it runs once the turn before it completed and was saved, then all is idle" wait_for b "^ idle" 30
check "... its prompt is the last turn's" bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep user/message | tail -1 | grep -q '\"text\":\"two\"'"
check "... the log holds input/queued and input/dequeued for it" \
	bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep -q input/dequeued"

keys b "three" Enter
check "Esc during a turn cancels it" wait_for b "^ streaming"
keys b Escape
check "... the turn shows canceled" wait_for b "^  canceled"
check "... and the log ends it canceled" bash -c "sleep 0.5; '$CAIRN' --data-dir '$DATA' log cat $ID | grep turn/end | tail -1 | grep -q canceled"
wait_for b "^ idle" >/dev/null

keys b "run touch denied-file" Enter
check "a tool call under policy ask waits for the user" wait_for b "^  allow shell: touch denied-file \\?$"
check "... the status line says approval" wait_for b "^ approval"
keys b n
check "... n denies it: the block says denied" wait_for b "denied"
check "... and nothing ran" test ! -e "$T/work/denied-file"
wait_for b "^ idle" 20 >/dev/null
keys b "run touch allowed-file" Enter
wait_for b "^  allow shell: touch allowed-file \\?$" >/dev/null
keys b y
check "... y allows it once: it runs" bash -c "for i in \$(seq 100); do [ -e '$T/work/allowed-file' ] && exit 0; sleep 0.05; done; exit 1"
check "... and the model got its result" wait_for b "done: "
wait_for b "^ idle" 20 >/dev/null

keys b "stream while I resize" Enter
wait_for b "^ streaming" >/dev/null
TM resize-window -t b -x 50 -y 20 2>/dev/null || TM resize-pane -t b -x 50 -y 20
check "a resize while streaming: the stream goes on and ends" wait_for b "^ idle" 20
check "... every line fits the new width" python3 -c 'import sys; sys.exit(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")) > 50)' <(screen b)

keys b "long answer to stop" Enter
wait_for b "^ streaming" >/dev/null
PID=$(cairn_pid b)
kill -TERM "$PID"
check "SIGTERM while streaming: cairn drains and exits" test "$(wait_exit b)" = 0
check "... the turn was canceled and saved" \
	bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep turn/end | tail -1 | grep -q canceled"

start c -c
keys c "killed mid-stream" Enter
wait_for c "^ streaming" >/dev/null
kill -KILL "$(cairn_pid c)"
wait_exit c >/dev/null
start d -c
check "SIGKILL while streaming, then cairn -c: the turn shows interrupted" wait_for d "interrupted"
check "... its prompt is there" wait_for d "^> killed mid-stream"
keys d C-c
keys d C-c
check "Ctrl-C twice quits" test "$(wait_exit d)" = 0
finish
