#!/usr/bin/env bash
# The terminal is given back on every way out: Ctrl-Z suspends (the shell
# gets a normal screen) and fg redraws; a fatal signal (SIGSEGV, SIGABRT)
# restores the screen and the modes (canonical input, echo) before the
# process dies as the signal says. cairn runs under an interactive shell
# in the tmux pane, as a user runs it.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
TM new-session -d -s main -n sh -x 80 -y 24 "cd '$T/work' && env PS1='sh\$ ' bash --norc --noprofile -i"
TM set-option -t sh remain-on-exit on >/dev/null
alt() { TM display -p -t sh '#{alternate_on}'; }
run_cairn() { keys sh "'$CAIRN' --data-dir '$DATA'" Enter; wait_for sh "^ idle" >/dev/null; }

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
