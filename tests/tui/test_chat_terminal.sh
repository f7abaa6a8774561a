#!/usr/bin/env bash
# A terminal the screen cannot drive (TERM=dumb, an unknown TERM) is
# refused before anything is drawn (exit 5, the message naming TERM and
# its value). The terminal is given back on every way out: Ctrl-Z
# suspends (the shell gets a normal screen) and fg redraws; a fatal signal
# (SIGSEGV, SIGABRT) restores the screen and the modes (canonical input,
# echo) before the process dies as the signal says. cairn runs under an
# interactive shell in the tmux pane, as a user runs it.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
TM new-session -d -s main -n sh -x 80 -y 24 "cd '$T/work' && env PS1='sh\$ ' bash --norc --noprofile -i"
TM set-option -t sh remain-on-exit on >/dev/null
alt() { TM display -p -t sh '#{alternate_on}'; }
run_cairn() { keys sh "'$CAIRN' --data-dir '$DATA'" Enter; wait_for sh "^ idle" >/dev/null; }

# A terminal that cannot address the cursor, or one terminfo does not
# know: refused before anything is drawn, naming TERM and its value.
keys sh "TERM=dumb '$CAIRN' --data-dir '$DATA'; echo rc=\$?" Enter
check "TERM=dumb: refused with exit 5" wait_for sh "^rc=5$"
# The screen with wrapped lines joined: the message is longer than a row.
wait_for_cond() { local i; for i in $(seq 200); do "$@" && return 0; sleep 0.05; done; return 1; }
said() { TM capture-pane -p -J -t sh | grep -Eq -- "$1"; }
check "... the message names the variable and its value, and says -p works" \
	said "^cairn: TERM=dumb cannot address the cursor; the chat screen needs one \(cairn -p works without\)$"
no_status_line() { ! screen sh | grep -q "idle |"; }
check "... nothing was drawn: no status line" no_status_line
keys sh "TERM=no-such-term '$CAIRN' --data-dir '$DATA'; echo rc=\$?" Enter
rc_lines() { test "$(screen sh | grep -c '^rc=5$')" = 2; }
check "an unknown TERM: refused with exit 5 too" wait_for_cond rc_lines
check "... the message names the variable and its value" \
	said "^cairn: TERM=no-such-term is unknown to terminfo; .*\(cairn -p works without\)$"
keys sh "clear" Enter

run_cairn
check "the chat screen is on the alternate screen" test "$(alt)" = 1
keys sh C-z
check "Ctrl-Z suspends: the shell says the job stopped" wait_for sh "Stopped"
check "... on the normal screen" test "$(alt)" = 0
keys sh "fg" Enter
check "fg brings the screen back, redrawn" wait_for sh "^ idle"
check "... on the alternate screen" test "$(alt)" = 1
keys sh C-d
check "quit after fg: the shell is back" wait_for sh 'resume:|sh\$'

for sig in SEGV ABRT; do
	run_cairn
	pid=$(pgrep -P "$(TM display -p -t sh '#{pane_pid}')" -x cairn)
	kill -$sig "$pid"
	# Dead by the signal (or, under a sanitizer, by its report of it).
	check "SIG$sig: cairn dies" bash -c "for i in \$(seq 200); do kill -0 $pid 2>/dev/null || exit 0; sleep 0.05; done; exit 1"
	check "... the normal screen is back" test "$(alt)" = 0
	keys sh "stty -a | tr ' ' '\\n' | grep -x -e -icanon -e icanon -e echo -e -echo | tr '\\n' ' '; echo" Enter
	check "... canonical input and echo are back" wait_for sh "^icanon echo"
	keys sh "clear" Enter
done
finish
