# lib.sh — the chat screen's end-to-end tests drive the real binary in a
# private tmux server (its own socket, no user configuration) and read the
# screen back with capture-pane, as tmux's own regress tests do. TAP lines
# through tests/cli/lib.sh's ok / not_ok / check.
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"
command -v tmux >/dev/null || { echo "1..0 # SKIP tmux is not installed"; exit 0; }
SOCK="cairn-test-$$"
TM() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup_tmux() { TM kill-server 2>/dev/null; }
trap 'cleanup_tmux; rm -rf "$T"' EXIT
export XDG_CONFIG_HOME="$T/config" LANG=C.UTF-8 LC_ALL=C.UTF-8
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL NO_COLOR
mkdir -p "$T/config/cairn" "$T/work"
DATA="$T/data"

# start NAME ARGS...: cairn's chat screen in a new 80x24 window NAME, in
# $T/work; when it exits, its status goes to $T/NAME.exit.
start() {
	local name=$1
	shift
	# The pane stays after cairn exits (its last screen is read back).
	local cmd="cd '$T/work' && '$CAIRN' --data-dir '$DATA' $*; echo \"exit=\$?\" >'$T/$name.exit'; sleep 600"
	if ! TM has-session 2>/dev/null; then
		TM new-session -d -s main -n "$name" -x 80 -y 24 "$cmd"
	else
		TM new-window -d -n "$name" "$cmd"
	fi
}
screen() { TM capture-pane -p -t "$1"; }
# wait_for NAME PATTERN [SECONDS]: until the screen matches (grep -E).
wait_for() {
	local i
	for i in $(seq $((${3:-10} * 20))); do
		screen "$1" | grep -Eq -- "$2" && return 0
		sleep 0.05
	done
	echo "# screen of $1 (waited for '$2'):"
	screen "$1" | sed 's/^/#   /'
	return 1
}
keys() { local n=$1; shift; TM send-keys -t "$n" "$@"; }
# wait_exit NAME [SECONDS]: until cairn in NAME exited; prints its status.
wait_exit() {
	local i
	for i in $(seq $((${2:-10} * 20))); do
		[ -s "$T/$1.exit" ] && { sed 's/exit=//' "$T/$1.exit"; return 0; }
		sleep 0.05
	done
	echo timeout
}
pane_pid() { TM display -p -t "$1" '#{pane_pid}'; }
# The cairn process in NAME's pane (the shell's child).
cairn_pid() { pgrep -P "$(pane_pid "$1")" -x cairn; }
