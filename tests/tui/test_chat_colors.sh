#!/usr/bin/env bash
# Colours: inline and fenced code are drawn in one of the 8 colours of an
# 8-colour terminal (TERM=xterm), on the user's own background; NO_COLOR
# turns every colour off and the screen still shows code apart (bold) and
# works.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}, "bell": false}\n' >"$T/config/cairn/config.json"
# Lines with an SGR setting a foreground or background colour (30-38,
# 40-48, 90-97, 100-107; 39 and 49 are tmux's resets to the defaults).
colour_sgr() { grep -Ec $'\033\\[([0-9;]*;)?(3[0-8]|4[0-8]|9[0-7]|10[0-7])(;[0-9;]*)?m'; }
run() { TM new-window -d -n "$1" "cd '$T/work' && env $2 '$CAIRN' --data-dir '$DATA'; echo \"exit=\$?\" >'$T/$1.exit'; sleep 600"; }
TM new-session -d -s main -n sh -x 80 -y 24 "sleep 600"
answer() {
	keys "$1" "show me" Enter
	wait_for "$1" "^ idle" >/dev/null
	wait_for "$1" "cairn config" >/dev/null
}

check "TERM=xterm is an 8-colour terminal" test "$(tput -T xterm colors)" = 8
run col TERM=xterm
wait_for col "^ idle" >/dev/null
answer col
n=$(TM capture-pane -e -p -t col | colour_sgr)
check "code is drawn in colour ($n lines with a colour)" test "$n" -gt 0

run nocol NO_COLOR=1
wait_for nocol "^ idle" >/dev/null
answer nocol
n=$(TM capture-pane -e -p -t nocol | colour_sgr)
check "with NO_COLOR, no colour at all ($n lines)" test "$n" -eq 0
check "... code still stands apart (bold)" bash -c "tmux -L '$SOCK' capture-pane -e -p -t nocol | grep -q $'\033\\\\[1m'"
keys nocol C-d
check "... and it quits as usual" test "$(wait_exit nocol)" = 0
keys col C-d
wait_exit col >/dev/null
finish
