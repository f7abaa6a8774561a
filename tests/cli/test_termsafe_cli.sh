#!/usr/bin/env bash
# test_termsafe_cli.sh — nothing from a log, a title, a path or an error
# reaches the terminal raw. Every command's text output and error messages
# over crafted cwds (an OSC, C1 controls, U+202E), titles, turn and call ids,
# search snippets, paths (with raw 8-bit bytes too) and bad arguments: no
# ESC, BEL, other C0 but newline and tab, DEL, C1 (as UTF-8 or as raw
# bytes) or bidi control in stdout or stderr, the text shown inert (^[,
# \u202e, \x9b) instead; --json output without them either, parsing back to
# the original strings. Needs python3.
source "$(dirname "$0")/lib.sh"

# inert FILE: FILE is UTF-8 with no control a terminal acts on.
inert() {
	python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
try:
    s = b.decode("utf-8")
except UnicodeDecodeError as e:
    print("not UTF-8:", e); sys.exit(1)
bidi = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
bad = [hex(ord(c)) for c in s if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f or c in bidi]
if bad:
    print("raw controls:", bad[:10]); sys.exit(1)' "$1" >"$T/inert.why" 2>&1
}
# run CODE DESC CMD...: run CMD (stdout in $T/out, stderr in $T/err), check
# its exit code, and that neither stream carries a raw control.
run() {
	local want=$1 desc=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	local rc=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
	if [ "$rc" -ne "$want" ]; then
		not_ok "$desc" "exit $rc, wanted $want" "stdout: $(head -c 400 "$T/out" | od -c | head -5)" \
			"stderr: $(head -c 400 "$T/err" | od -c | head -5)"
	elif ! inert "$T/out"; then
		not_ok "$desc" "stdout: $(cat "$T/inert.why")"
	elif ! inert "$T/err"; then
		not_ok "$desc" "stderr: $(cat "$T/inert.why")"
	else
		ok "$desc"
	fi
}
# shows TEXT: the command's stdout or stderr holds TEXT (fixed string).
shows() { grep -qF -- "$1" "$T/out" "$T/err"; }
# pyj EXPR [ARG...]: the python EXPR holds for v = the JSON on stdout (A =
# the ARGs, decoded from the shell's bytes as UTF-8; S(id) = the listed
# session or search hit of id).
pyj() {
	local expr=$1
	shift
	python3 -c 'import json,sys
A=[a.encode("utf-8","surrogateescape").decode("utf-8","replace") for a in sys.argv[3:]]
v=json.load(open(sys.argv[1], encoding="utf-8"))
if isinstance(v,dict) and "hits" in v: v=v["hits"] # search --json
def S(i): return [s for s in v if s.get("id", s.get("session"))==i][0]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/out" "$expr" "$@"
}
# pyl EXPR [ARG...]: the same for L = the JSON lines on stdout.
pyl() {
	local expr=$1
	shift
	python3 -c 'import json,sys
A=[a.encode("utf-8","surrogateescape").decode("utf-8","replace") for a in sys.argv[3:]]
L=[json.loads(x) for x in open(sys.argv[1], encoding="utf-8").read().splitlines()]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/out" "$expr" "$@"
}
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

OSC=$'\e]0;pwned\a'               # sets the terminal's title
CSI=$'\e[2J\e[31m'                # clears the screen, turns red
C1=$'\xc2\x9b31m\xc2\x9d0;c1\xc2\x9c' # CSI and OSC as C1 characters (UTF-8)
RLO=$'\xe2\x80\xae'               # right-to-left override
LRI=$'\xe2\x81\xa6'               # left-to-right isolate
NASTY="$OSC$CSI$C1$RLO$LRI"$'\x7f'

# --- a session with a crafted cwd, prompt, turn and call ids -----------------

CWD="$T/dir$NASTY"
mkdir -p "$CWD"
TURN="t$OSC$RLO"
CALL="call$CSI$C1"
PROMPT="needle $NASTY"$'\nsecond line'
{
	echo "{\"type\":\"turn/start\",\"turn\":$(jstr "$TURN"),\"data\":{}}"
	echo "{\"type\":\"user/message\",\"turn\":$(jstr "$TURN"),\"data\":{\"text\":$(jstr "$PROMPT")}}"
	echo "{\"type\":\"tool/call\",\"turn\":$(jstr "$TURN"),\"data\":{\"call_id\":$(jstr "$CALL"),\"name\":\"sh\",\"args\":{}}}"
} >"$T/batch"
run 0 "log append --new --cwd DIR-with-controls" "$CAIRN" log append --new --cwd "$CWD" <"$T/batch"
S=${OUT%% *}
check "... printed the new id" test ${#S} -eq 26
LOG=$(echo "$CAIRN_HOME"/sessions/*/"$S"/session.jsonl.zst)
K0=$(stat -c %s "$LOG")
# Derived titles drop controls (docs/catalog.md); what is left is shown.
DERIVED='needle ]0;pwned[2J[31m31m0;c1 second line'

# A cwd that is not UTF-8 (raw C1 bytes) cannot be held by the header's
# JSON: refused, instead of acknowledging a log that no reader accepts.
RAW="$T/raw"$'\x9b\x9d'"$OSC"
mkdir -p "$RAW"
run 2 "log append --new --cwd DIR-not-UTF-8 is refused" "$CAIRN" log append --new --cwd "$RAW" <"$T/batch"
check "... naming the cwd inert" shows "the cwd '$T/raw\\x9b\\x9d^[]0;pwned^G' is not UTF-8"
check "... and creating nothing" test "$(ls "$CAIRN_HOME/sessions" | wc -l)" -eq 1
run 2 "... the same from inside it" bash -c 'cd "$1" && "$2" log append --new' _ "$RAW" "$CAIRN" <"$T/batch"
run 0 "... while --no-cwd works there" bash -c 'cd "$1" && "$2" log append --new --no-cwd' _ "$RAW" "$CAIRN" <"$T/batch"
S2=${OUT%% *}

run 0 "sessions: the cwd and the title (the prompt) shown inert" "$CAIRN" sessions
check "... the OSC in the cwd shown as ^[]0;pwned^G" shows "dir^[]0;pwned^G^[[2J^[[31m\\u009b31m\\u009d0;c1\\u009c\\u202e\\u2066^?"
check "... the derived title" shows "$DERIVED"
run 0 "sessions --all" "$CAIRN" sessions --all
run 0 "sessions --project DIR" "$CAIRN" sessions --project "$CWD"
check "... lists the session" shows "$S"
run 0 "sessions --json" "$CAIRN" sessions --json
check "... parses back to the original cwd and title" \
	pyj 'S(A[2])["cwd"]==A[0] and S(A[2])["title"]==A[1]' "$CWD" "$DERIVED" "$S"

run 0 "inspect ID: the open turn and the unmatched call shown inert" "$CAIRN" inspect "$S"
check "... open_turn: t^[]0;pwned^G\\u202e" shows "open_turn: t^[]0;pwned^G\\u202e"
check "... the call id" shows "unmatched_tool_calls: call^[[2J^[[31m\\u009b31m"
run 0 "inspect --json ID" "$CAIRN" inspect --json "$S"
check "... parses back to the original turn and call ids" \
	pyj 'v["open_turn"]==A[0] and v["unmatched_tool_calls"]==[A[1]]' "$TURN" "$CALL"

run 0 "log cat ID" "$CAIRN" log cat "$S"
check "... JSON lines that parse back to the original strings" \
	pyl 'L[0]["data"]["cwd"]==A[0] and L[2]["data"]["text"]==A[1] and L[3]["data"]["call_id"]==A[2] and L[1]["turn"]==A[3]' \
	"$CWD" "$PROMPT" "$CALL" "$TURN"

run 0 "doctor: the interrupted turn's id shown inert" "$CAIRN" doctor
check "... in the note" shows "turn 't^[]0;pwned^G\\u202e' was interrupted"
run 0 "doctor --json" "$CAIRN" doctor --json
check "... parses back to the original turn id in the message" \
	pyj 'any(A[0] in n["message"] for n in v["notes"])' "$TURN"

run 0 "doctor --reindex" "$CAIRN" doctor --reindex
check "... the note still inert" shows "turn 't^[]0;pwned^G\\u202e' was interrupted"

run 0 "search: the snippet shown inert" "$CAIRN" search needle
check "... with the OSC as ^[" shows "^[]0;pwned^G"
check "... and U+202E as \\u202e" shows "\\u202e"
run 0 "search --json" "$CAIRN" search --json needle
check "... parses back to a snippet holding the raw controls" \
	pyj '(h:=S(A[0])) and "\x1b]0;pwned\x07" in h["snippet"] and "\u202e" in h["snippet"] and "\x9b" in h["snippet"] and h["turn"]==A[1]' "$S" "$TURN"

# --- titles ----------------------------------------------------------------------

TITLE="title $OSC"$'\n'"$RLO$C1"$'\t\x01'
run 0 "rename to a title with controls" "$CAIRN" rename "$S" "$TITLE"
run 0 "sessions: the explicit title shown inert" "$CAIRN" sessions
check "... as one short line (controls dropped, whitespace collapsed)" shows "title ]0;pwned 31m0;c1"
run 0 "sessions --json" "$CAIRN" sessions --json
check "... the exact title, its controls escaped" pyj 'S(A[0])["title"]==A[1]' "$S" "$TITLE"
run 0 "pin" "$CAIRN" pin "$S"
run 0 "unpin" "$CAIRN" unpin "$S"

# --- repair: the closers it appends name the turn and the call ---------------------

cp "$LOG" "$T/copy.zst"
run 0 "repair ID: the closed call and turn shown inert" "$CAIRN" repair "$S"
check "... tool/result for the call" shows "tool/result call^[[2J^[[31m\\u009b31m\\u009d0;c1\\u009c not_executed (turn t^[]0;pwned^G\\u202e)"
K1=$(stat -c %s "$LOG")
turn2=$(printf '{"type":"turn/start","turn":"t2","data":{}}\n{"type":"turn/end","turn":"t2","data":{"outcome":"completed"}}')
run 0 "log append ID" "$CAIRN" log append "$S" --expect-seq "${OUT##* }" <<<"$turn2"
run 0 "repair --json of a copy" "$CAIRN" repair --json "$T/copy.zst"
check "... parses back to the original ids" \
	pyj 'v["appended"][0]["data"]["call_id"]==A[0] and v["appended"][0]["turn"]==A[1]' "$CALL" "$TURN"

# --- paths: crafted names, raw 8-bit bytes (not UTF-8) ------------------------------

PDIR="$T/p$OSC"$'\x9b\x9d\xff'"$RLO"
mkdir -p "$PDIR"
cp "$LOG" "$PDIR/log.zst"
run 0 "inspect PATH with controls and raw bytes" "$CAIRN" inspect "$PDIR/log.zst"
check "... the path shown inert (^[ and \\x9b)" shows "p^[]0;pwned^G\\x9b\\x9d\\xff\\u202e/log.zst"
run 0 "inspect --json PATH" "$CAIRN" inspect --json "$PDIR/log.zst"
check "... valid JSON: the bytes that are not UTF-8 as U+FFFD" \
	pyj 'v["path"].endswith("p\x1b]0;pwned\x07\ufffd\ufffd\ufffd\u202e/log.zst")'
run 0 "log cat PATH" "$CAIRN" log cat "$PDIR/log.zst"
run 0 "repair PATH" "$CAIRN" repair "$PDIR/log.zst"
check "... the path shown inert" shows "p^[]0;pwned^G\\x9b\\x9d\\xff\\u202e/log.zst:"
run 0 "repair PATH again: nothing to repair" "$CAIRN" repair "$PDIR/log.zst"
run 3 "inspect of a missing PATH" "$CAIRN" inspect "$PDIR/none$CSI"
check "... names it inert on stderr" shows "none^[[2J^[[31m'"
run 3 "inspect --json of a missing PATH (the error on stdout)" "$CAIRN" inspect --json "$PDIR/none$CSI"
check "... parses to the message" pyj '"none\x1b[2J\x1b[31m" in v["error"]["message"]'
run 3 "log cat of a missing PATH" "$CAIRN" log cat "$PDIR/none$OSC"
run 3 "repair of a missing PATH" "$CAIRN" repair "$PDIR/none$OSC"
run 2 "repair --salvage of a log that is not corrupt" "$CAIRN" repair --salvage "$PDIR/log.zst"
check "... names the path inert" shows "\\x9b\\x9d\\xff\\u202e/log.zst' is not corrupt"
ln -s "$PDIR/log.zst" "$PDIR/link$OSC"
run 4 "inspect of a symlink PATH" "$CAIRN" inspect "$PDIR/link$OSC"
mkfifo "$PDIR/fifo$RLO"
run 4 "inspect of a FIFO PATH" "$CAIRN" inspect "$PDIR/fifo$RLO"

# A corrupt log at a crafted path: the error and the salvage hint quote it.
cp "$LOG" "$PDIR/bad$OSC.zst"
# A byte flipped in the frame repair appended (not the last one).
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^0xff]))' \
	"$PDIR/bad$OSC.zst" $(((K0 + K1) / 2))
run 4 "inspect of a corrupt log at a crafted PATH" "$CAIRN" inspect "$PDIR/bad$OSC.zst"
check "... the hint quotes the path inert" shows "bad^[]0;pwned^G.zst' copies"
run 4 "log cat of it" "$CAIRN" log cat "$PDIR/bad$OSC.zst"
run 4 "repair of it" "$CAIRN" repair "$PDIR/bad$OSC.zst"
check "... the salvage hint quotes the path inert" shows "bad^[]0;pwned^G.zst' copies"
run 0 "repair --salvage of it" "$CAIRN" repair --salvage "$PDIR/bad$OSC.zst"
check "... the note quotes the path inert" shows "bad^[]0;pwned^G.zst' into new session"

# --- a data root whose name carries controls ---------------------------------------

ROOT="$T/root$OSC"$'\x9b'
mkdir -p "$ROOT"
run 0 "cairn without a command shows the data root inert" "$CAIRN" --data-dir "$ROOT"
check "... as root^[]0;pwned^G\\x9b" shows "data root: $T/root^[]0;pwned^G\\x9b"

# --- error messages quoting input -----------------------------------------------------

run 2 "sessions --foo OSC" "$CAIRN" sessions --foo "$OSC"
check "... quotes the option inert" shows "unexpected argument '--foo'"
run 2 "sessions OSC" "$CAIRN" sessions "$OSC"
check "... quotes the argument inert" shows "unexpected argument '^[]0;pwned^G'"
run 2 "an unknown global option" "$CAIRN" "--$OSC" sessions
check "... quoted inert" shows "unknown option '--^[]0;pwned^G'"
run 2 "an unknown command" "$CAIRN" "$OSC$RLO"
check "... quoted inert" shows "unknown command '^[]0;pwned^G\\u202e'"
run 2 "help of an unknown command" "$CAIRN" help "$C1"
run 2 "an unknown log command" "$CAIRN" log "$CSI"
run 2 "inspect with an unknown option" "$CAIRN" inspect "-$OSC"
run 2 "repair with an unknown option" "$CAIRN" repair "-$OSC"
run 2 "search with an unknown option" "$CAIRN" search "--$OSC" x
run 2 "doctor with an unexpected argument" "$CAIRN" doctor "$OSC"
run 2 "purge with an unknown option" "$CAIRN" purge "-$OSC"
run 2 "log append with an unknown option" "$CAIRN" log append "-$OSC"
run 2 "log cat of a bad id" "$CAIRN" log cat "$OSC"
check "... quoted inert" shows "^[]0;pwned^G"
run 2 "inspect of a bad id" "$CAIRN" inspect "01$C1"
run 2 "rename of a bad id" "$CAIRN" rename "$OSC" title
run 2 "pin of a bad id" "$CAIRN" pin "$RLO"
run 2 "rm of a bad id" "$CAIRN" rm "$OSC"
run 2 "restore of a bad id" "$CAIRN" restore "$OSC"
check "... quoted inert" shows "'^[]0;pwned^G' is not a session id"
run 2 "purge of a bad id" "$CAIRN" purge --yes "$CSI"
run 2 "log append to a bad id" "$CAIRN" log append "$OSC" --expect-seq 0 </dev/null
echo "{\"type\":\"user/message\",\"data\":{\"text\":\"x\"},$(jstr "$OSC"):1}" >"$T/badfield"
run 2 "log append with a crafted field name" "$CAIRN" log append "$S" --expect-seq 99 <"$T/badfield"
check "... quotes the field inert" shows "unexpected or invalid \"^[]0;pwned^G\""
printf '\x1b]0;x\x07\n' >"$T/badjson"
run 2 "log append of a line that is not JSON" "$CAIRN" log append --new <"$T/badjson"
printf '{"type":"x\\u001b]0;y\\u0007","data":{}}\n' >"$T/badtype"
run 2 "log append of an unknown type with controls" "$CAIRN" log append --new <"$T/badtype"
run 1 "--data-dir that is a file" "$CAIRN" --data-dir "$LOG" sessions
run 0 "rm" "$CAIRN" rm "$S"
run 0 "sessions --trash" "$CAIRN" sessions --trash
check "... the cwd shown inert" shows "dir^[]0;pwned^G"
run 0 "sessions --trash --json" "$CAIRN" sessions --trash --json
check "... the cwd parses back" pyj 'S(A[1])["cwd"]==A[0]' "$CWD" "$S"
run 0 "restore" "$CAIRN" restore "$S"
run 0 "log append --json" "$CAIRN" log append --json "$S2" --expect-seq 4 <<<"$turn2"
check "... parses" pyj 'v["id"]==A[0]' "$S2"

finish
