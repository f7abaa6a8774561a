#!/usr/bin/env bash
# Slash commands in the composer (Tab completes them; an unknown one is an
# error on the status line, never sent to the model), Ctrl-G's external
# editor (an edit over the limit refused), the help screen (the keys, then the slash commands), and
# scrolling back while an answer streams.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
log_of() { "$CAIRN" --data-dir "$DATA" log cat "$1"; }
last_id() { "$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
# The editor: an edit of the draft, or (once $T/big exists) a file over
# the limit the prompt is read back with (8 MiB).
cat >"$T/ed.sh" <<'ED'
if [ -e "$(dirname "$0")/big" ]; then head -c 9000000 /dev/zero | tr '\0' x >"$1"; else sed -i s/draft/edited/ "$1"; fi
ED
export EDITOR="sh $T/ed.sh"
start a
wait_for a "^ idle" >/dev/null
keys a "first" Enter
wait_for a "cairn config" >/dev/null
wait_for a "^ idle" >/dev/null
ID=$(last_id)
keys a "/ti" Tab
check "Tab completes a command's name" wait_for a "^> /title$"
keys a "Renamed by a command" Enter
check "/title renames the session: the status line shows it" wait_for a "Renamed by a command"
check "... recorded in the log (session/meta)" bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep session/meta | grep -q 'Renamed by a command'"
keys a "/frobnicate" Enter
check "an unknown command is an error on the status line" wait_for a "unknown command '/frobnicate'"
check "... and never sent to the model" bash -c "! '$CAIRN' --data-dir '$DATA' log cat $ID | grep -q frobnicate"
keys a "/approve all" Enter
wait_for a "recorded" >/dev/null
keys a "run touch by-policy" Enter
check "/approve all: a tool call runs without asking" bash -c "for i in \$(seq 100); do [ -e '$T/work/by-policy' ] && exit 0; sleep 0.05; done; exit 1"
check "... the policy is recorded in the session's settings" bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep session/settings | grep -q '\"approval\":\"all\"'"
wait_for a "^ idle" >/dev/null
keys a "/model other-model" Enter
check "/model NAME: from the next turn" wait_for a "model: other-model from the next turn"
keys a "/save" Enter
check "/save answers (nothing to recover: saved)" wait_for a "saved"
keys a "a draft to fix"
keys a C-g
check "Ctrl-G edits the prompt in \$EDITOR: the composer shows the result" wait_for a "^> a edited to fix"
keys a C-u
touch "$T/big"
keys a "kept as it was"
keys a C-g
check "an edit over the limit is refused, classified" wait_for a "cannot read the edited prompt back: it is larger than 8388608 bytes"
check "... the prompt is as it was" wait_for a "^> kept as it was$"
check "... and the editor's file is gone" bash -c "! ls '$DATA' | grep -q '^prompt-'"
rm "$T/big"
keys a C-u
keys a F1
check "F1 shows every key" wait_for a "Alt-Enter"
# PgDn a page at a time until the line shows (the help has ~130 lines).
paged_to() {
	local i
	for i in $(seq 20); do
		wait_for a "$1" 1 >/dev/null && return 0
		keys a NPage
	done
	return 1
}
check "... and, at its end, every slash command with its arguments (the command table)" \
	paged_to "^  +/approve ask\|read-only\|all +set this session's approval policy"
keys a Escape
check "... Esc closes it" wait_for a "cairn config"
keys a "/new" Enter
check "/new starts a new session" wait_for a "a new session"
keys a "/quit" Enter
check "/quit quits" test "$(wait_exit a)" = 0
finish
