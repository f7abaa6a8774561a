#!/usr/bin/env bash
# test_log_cli.sh — the log store from the command line: global options,
# `log append` (new sessions, compare-and-swap appends, input validation,
# modes), session ids and prefixes, PATH arguments, `log cat`.
# Needs python3 (JSON checks), zstd (crafted logs) and coreutils.
source "$(dirname "$0")/lib.sh"

# --- helpers -------------------------------------------------------------

# pyj EXPR [ARG...]: true when the python EXPR holds for v = the JSON in
# $OUT (A = the ARGs).
pyj() { python3 -c 'import json,sys; A=sys.argv[2:]; v=json.load(sys.stdin); sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"; }
# pyl EXPR [ARG...]: the same with L = the JSON lines of $OUT.
pyl() { python3 -c 'import json,sys; A=sys.argv[2:]; L=[json.loads(x) for x in sys.stdin.read().splitlines()]; sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"; }
# logfile ID [ROOT]: the log path of session ID (empty when none).
logfile() { local m=("${2:-$CAIRN_HOME}"/sessions/*/"$1"/session.jsonl.zst); [ -f "${m[0]}" ] && echo "${m[0]}"; }
# nsessions ROOT: how many session logs ROOT holds.
nsessions() { find "$1" -name session.jsonl.zst 2>/dev/null | wc -l; }
# frame FILE LINE...: append the lines as one zstd frame (checksum and
# content size, as the format requires) to FILE.
frame() {
	local f=$1
	shift
	printf '%s\n' "$@" >"$T/frame.txt"
	zstd -q -c --check --content-size "$T/frame.txt" >>"$f"
}
# craft ROOT KEY ID: a log made without cairn, header + one event.
craft() {
	mkdir -p -m 700 "$1/sessions/$2/$3"
	local f="$1/sessions/$2/$3/session.jsonl.zst"
	frame "$f" "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":1,\"id\":\"$3\",\"created_at\":1,\"cwd\":null}}"
	frame "$f" "{\"seq\":1,\"t\":2,\"type\":\"user/message\",\"data\":{\"text\":\"I am $3\"}}"
	chmod 600 "$f"
}
# snapshot DIR: names, modes, sizes and mtimes of everything under DIR.
snapshot() { find "$1" -printf '%p %m %s %T@\n' | sort; }

ULID='^[0-9A-HJKMNP-TV-Z]{26}'
MSG='{"type":"user/message","data":{"text":"hello"}}'

# --- global options and dispatch ------------------------------------------

expect_code 0 "--help exits 0" "$CAIRN" --help
check "--help shows usage and the subcommands" \
	grep -Eq 'usage: cairn.*' <<<"$OUT"
check "--help lists log, inspect and repair" \
	bash -c 'grep -q "^  log " <<<"$1" && grep -q "^  inspect " <<<"$1" && grep -q "^  repair " <<<"$1"' _ "$OUT"
expect_code 0 "--version exits 0" "$CAIRN" --version
check "--version prints 'cairn X.Y.Z'" grep -Eq '^cairn [0-9]+\.[0-9]+\.[0-9]+$' <<<"$OUT"
expect_code 0 "the version subcommand" "$CAIRN" version
expect_code 0 "help COMMAND" "$CAIRN" help log
check "help log shows the log usage" grep -q 'log append' <<<"$OUT"
expect_code 0 "COMMAND --help" "$CAIRN" inspect --help
expect_code 2 "unknown command exits 2" "$CAIRN" frobnicate
check "unknown command is named on stderr" grep -q frobnicate <<<"$ERR"
expect_code 2 "unknown global option exits 2" "$CAIRN" --frobnicate log cat x
expect_code 2 "help of an unknown command exits 2" "$CAIRN" help frobnicate
expect_code 2 "log without a subcommand" "$CAIRN" log
expect_code 2 "unknown log subcommand" "$CAIRN" log frob
expect_code 2 "inspect without an argument" "$CAIRN" inspect
expect_code 2 "repair with two arguments" "$CAIRN" repair a b
expect_code 2 "inspect with an unknown option" "$CAIRN" inspect --frob x
expect_code 2 "--data-dir without a value" "$CAIRN" --data-dir
expect_code 2 "--data-dir with an empty value" "$CAIRN" --data-dir "" log cat x

# --- the data root ---------------------------------------------------------

D2="$T/other-root"
expect_code 0 "--data-dir before the subcommand" "$CAIRN" --data-dir "$D2" log append --new --no-cwd --json <<<"$MSG"
did=$(json id)
check "--data-dir: the log is under DIR" test -n "$(logfile "$did" "$D2")"
check "--data-dir overrides \$CAIRN_HOME (nothing written there)" test ! -e "$CAIRN_HOME"
expect_code 3 "the session is not under \$CAIRN_HOME" "$CAIRN" log cat "$did"
expect_code 0 "--data-dir=DIR form" "$CAIRN" --data-dir="$D2" log cat "$did"
expect_code 0 "CAIRN_HOME names the root" env CAIRN_HOME="$D2" "$CAIRN" log cat "$did"
expect_code 0 "without CAIRN_HOME: \$XDG_DATA_HOME/cairn" \
	env -u CAIRN_HOME XDG_DATA_HOME="$T/xdg" "$CAIRN" log append --new --no-cwd <<<"$MSG"
check "... the log is under \$XDG_DATA_HOME/cairn" test -n "$(logfile "${OUT%% *}" "$T/xdg/cairn")"
expect_code 0 "without either: ~/.local/share/cairn" \
	env -u CAIRN_HOME -u XDG_DATA_HOME HOME="$T/hm" "$CAIRN" log append --new --no-cwd <<<"$MSG"
check "... the log is under \$HOME/.local/share/cairn" test -n "$(logfile "${OUT%% *}" "$T/hm/.local/share/cairn")"
# A relative XDG_DATA_HOME or HOME names no place (it would put the root
# under whatever directory cairn runs in): skipped like an unset one, so
# with neither of the others the command is refused (usage, 2).
mkdir -p "$T/rel"
expect_code 0 "a relative \$XDG_DATA_HOME is skipped for \$HOME" \
	bash -c 'cd "$1" && env -u CAIRN_HOME XDG_DATA_HOME=xdg HOME="$2" "$3" log append --new --no-cwd' \
	_ "$T/rel" "$T/hm" "$CAIRN" <<<"$MSG"
check "... the log is under \$HOME/.local/share/cairn" test -n "$(logfile "${OUT%% *}" "$T/hm/.local/share/cairn")"
check "... nothing under the cwd" test -z "$(ls -A "$T/rel")"
expect_code 2 "a relative \$HOME: no data directory (usage, 2)" \
	bash -c 'cd "$1" && env -u CAIRN_HOME -u XDG_DATA_HOME HOME=hm "$2" log append --new --no-cwd' \
	_ "$T/rel" "$CAIRN" <<<"$MSG"
check "... says HOME must be an absolute path" grep -q 'set HOME (an absolute path)' <<<"$ERR"
check "... nothing under the cwd" test -z "$(ls -A "$T/rel")"
expect_code 2 "... sessions refuses it too" \
	bash -c 'cd "$1" && env -u CAIRN_HOME -u XDG_DATA_HOME HOME=hm "$2" sessions' _ "$T/rel" "$CAIRN"
expect_code 0 "... the configuration is not looked for under the cwd" \
	bash -c 'cd "$1" && env -u CAIRN_HOME -u XDG_DATA_HOME -u XDG_CONFIG_HOME HOME=hm "$2" config' _ "$T/rel" "$CAIRN"
check "... config names no file" grep -q '^config file: (none' <<<"$OUT"

# --- log append --new ------------------------------------------------------

cat >"$T/b1" <<'EOF'
{"type":"turn/start","turn":"t1","data":{}}
{"type":"user/message","turn":"t1","data":{"text":"h\u00e9llo \"q\" \\ back\nline \u2713 ✓"}}

{"type":"assistant/text","turn":"t1","data":{"text":"hi","extra_field":[1,{"x":null}]}}
EOF
mkdir -p "$T/proj"
PROJ=$(cd "$T/proj" && pwd -P)
expect_code 0 "log append --new --cwd DIR" "$CAIRN" log append --new --cwd "$PROJ" <"$T/b1"
check "prints the new ULID and next seq 4" grep -Eq "$ULID 4\$" <<<"$OUT"
id=${OUT%% *}
f=$(logfile "$id")
check "the log is <root>/sessions/<key>/<id>/session.jsonl.zst" test -n "$f"
key=$(basename "$(dirname "$(dirname "$f")")")
check "the project key is one safe path component" \
	bash -c '[[ -n $1 && $1 != */* && $1 != . && $1 != .. ]]' _ "$key"
check "the log is 0600" test "$(stat -c %a "$f")" = 600
check "no staging files are left behind" test -z "$(find "$CAIRN_HOME" -name '*.tmp')"
expect_code 0 "log cat ID" "$CAIRN" log cat "$id"
CAT1=$OUT
check "log cat: header first with format 1, the id and the cwd" \
	pyl 'L[0]["seq"]==0 and L[0]["type"]=="session/header" and L[0]["data"]["format"]==1 and L[0]["data"]["id"]==A[0] and L[0]["data"]["cwd"]==A[1] and isinstance(L[0]["data"]["created_at"],int)' "$id" "$PROJ"
check "log cat: seq contiguous from 0, integer t, the batch's types and turns" \
	pyl '[e["seq"] for e in L]==[0,1,2,3] and all(isinstance(e["t"],int) for e in L) and [e["type"] for e in L[1:]]==["turn/start","user/message","assistant/text"] and all(e["turn"]=="t1" for e in L[1:])'
check "log cat: data kept exactly (escapes, unicode, unknown fields)" \
	pyl 'L[2]["data"]=={"text":"h\u00e9llo \"q\" \\ back\nline \u2713 \u2713"} and L[3]["data"]=={"text":"hi","extra_field":[1,{"x":None}]}'
check "log cat: one JSON object per line, nothing else" \
	bash -c '[ "$(wc -l <<<"$1")" -eq 4 ]' _ "$CAT1"

expect_code 0 "log append --new --cwd DIR --json" "$CAIRN" log append --new --cwd "$PROJ" --json <"$T/b1"
check "--json prints {id, next_seq, catalog}" pyj 'set(v)=={"id","next_seq","catalog"} and v["next_seq"]==4 and v["catalog"]=="current" and __import__("re").match(A[0]+"$",v["id"])' "$ULID"
id2=$(json id)
check "the same cwd gives the same project key" test "$(logfile "$id2")" = "$CAIRN_HOME/sessions/$key/$id2/session.jsonl.zst"
expect_code 0 "log append --new with a relative --cwd" bash -c 'cd "$1" && "$2" log append --new --cwd proj' _ "$T" "$CAIRN" <<<"$MSG"
expect_code 0 "... stored as an absolute cwd" "$CAIRN" log cat "${OUT%% *}"
check "... header cwd is absolute" pyl 'L[0]["data"]["cwd"]==A[0]' "$PROJ"
expect_code 0 "log append --new without --cwd uses the current directory" bash -c 'cd "$1" && "$2" log append --new' _ "$PROJ" "$CAIRN" <<<"$MSG"
expect_code 0 "... log cat" "$CAIRN" log cat "${OUT%% *}"
check "... header cwd is the process's cwd" pyl 'L[0]["data"]["cwd"]==A[0]' "$PROJ"
expect_code 0 "log append --new --no-cwd" "$CAIRN" log append --new --no-cwd <<<"$MSG"
nid=${OUT%% *}
check "--no-cwd: key _no-cwd" test -f "$CAIRN_HOME/sessions/_no-cwd/$nid/session.jsonl.zst"
expect_code 0 "... log cat" "$CAIRN" log cat "$nid"
check "--no-cwd: header cwd is null" pyl 'L[0]["data"]["cwd"] is None'
before_ls=$(ls -A "$T")
expect_code 0 "a hostile --cwd stays inside the root" "$CAIRN" log append --new --cwd "/../../$T/esc/../.." <<<"$MSG"
hid=${OUT%% *}
check "... the session is at sessions/<one key>/<id>" \
	bash -c 'm=("$1"/sessions/*/"$2"/session.jsonl.zst); [ -f "${m[0]}" ]' _ "$CAIRN_HOME" "$hid"
check "... nothing was created outside the root" bash -c '[ ! -e "$1/esc" ] && [ "$(ls -A "$1")" = "$2" ]' _ "$T" "$before_ls"

expect_code 0 "a 5000-byte --cwd" "$CAIRN" log append --new --cwd "/$(printf 'a%.0s' {1..5000})/x" <<<"$MSG"
lid=${OUT%% *}
check "... gets a bounded project key (at most 160 bytes)" \
	bash -c 'm=("$1"/sessions/*/"$2"); k=$(basename "$(dirname "${m[0]}")"); [ -d "${m[0]}" ] && [ "${#k}" -le 160 ]' _ "$CAIRN_HOME" "$lid"
expect_code 0 "... and keeps the whole cwd in its header" "$CAIRN" log cat "$lid"
check "... header cwd" pyl 'len(L[0]["data"]["cwd"])==5003'

# Modes whatever the umask: every directory 0700, every file 0600.
for um in 000 077 022; do
	R="$T/umask$um"
	old=$(umask)
	umask "$um"
	expect_code 0 "umask $um: log append --new" "$CAIRN" --data-dir "$R" log append --new --cwd "$PROJ" <<<"$MSG"
	expect_code 0 "umask $um: log append ID" "$CAIRN" --data-dir "$R" log append "${OUT%% *}" --expect-seq 2 <<<"$MSG"
	umask "$old"
	check "umask $um: directories 0700 (root, sessions, key, id)" \
		test "$(find "$R" -type d | wc -l)" -ge 4 -a -z "$(find "$R" -type d ! -perm 700)"
	check "umask $um: files 0600 (log and lock)" \
		test -n "$(find "$R" -name session.lock -perm 600)" -a -z "$(find "$R" -type f ! -perm 600)"
done

# --- log append ID --expect-seq N -----------------------------------------

cp "$f" "$T/before"
expect_code 6 "--expect-seq below the next seq: conflict (6)" "$CAIRN" log append "$id" --expect-seq 3 <<<"$MSG"
check "... the log is unchanged" cmp -s "$f" "$T/before"
expect_code 6 "--expect-seq beyond the next seq: conflict (6)" "$CAIRN" log append "$id" --expect-seq 5 <<<"$MSG"
check "... the log is unchanged" cmp -s "$f" "$T/before"
check "... the message says where the log is" grep -q 'seq 4' <<<"$ERR"
expect_code 0 "--expect-seq at the next seq appends" "$CAIRN" log append "$id" --expect-seq 4 <"$T/b1"
check "... prints the id and the new next seq" test "$OUT" = "$id 7"
expect_code 0 "append --json" "$CAIRN" log append "$id" --expect-seq 7 --json <<<"$MSG"
check "... {id, next_seq, catalog}" pyj 'v=={"id":A[0],"next_seq":8,"catalog":"current"}' "$id"
expect_code 2 "append without --expect-seq" "$CAIRN" log append "$id" <<<"$MSG"
expect_code 2 "--expect-seq -1" "$CAIRN" log append "$id" --expect-seq -1 <<<"$MSG"
expect_code 2 "--expect-seq x" "$CAIRN" log append "$id" --expect-seq x <<<"$MSG"
expect_code 2 "--new and an id together" "$CAIRN" log append --new "$id" <<<"$MSG"
expect_code 2 "--cwd with an existing session" "$CAIRN" log append "$id" --expect-seq 8 --cwd /x <<<"$MSG"
expect_code 3 "append to an unknown session: missing (3)" "$CAIRN" log append 01ZZZZZZZZZZZZZZZZZZZZZZZZ --expect-seq 1 <<<"$MSG"

# Invalid input: usage (2) and nothing written, in a new or an existing log.
cp "$f" "$T/before"
n0=$(nsessions "$CAIRN_HOME")
bad=(
	'seq given|{"seq":8,"type":"user/message","data":{"text":"x"}}'
	't given|{"t":1,"type":"user/message","data":{"text":"x"}}'
	'invalid JSON|{"type":"user/message","data":{"text":"x"}'
	'not JSON|hello'
	'not an object|[1,2]'
	'trailing garbage|{"type":"user/message","data":{"text":"x"}} x'
	'duplicate key|{"type":"user/message","type":"user/message","data":{"text":"x"}}'
	'missing type|{"data":{"text":"x"}}'
	'unknown type without ignorable|{"type":"x/future","data":{}}'
	'ignorable false|{"type":"x/future","ignorable":false,"data":{}}'
	'bad type name|{"type":"Bad Type","ignorable":true,"data":{}}'
	'header from input|{"type":"session/header","data":{"format":1,"id":"x","created_at":1,"cwd":null}}'
	'missing required text|{"type":"user/message","data":{}}'
	'text not a string|{"type":"user/message","data":{"text":5}}'
	'tool/call without args|{"type":"tool/call","turn":"t1","data":{"call_id":"c","name":"n"}}'
	'tool/result unknown status|{"type":"tool/result","turn":"t1","data":{"call_id":"c","status":"maybe"}}'
	'turn/end without outcome|{"type":"turn/end","turn":"t1","data":{}}'
	'turn/start without turn|{"type":"turn/start","data":{}}'
	"turn id over 128 bytes|{\"type\":\"turn/start\",\"turn\":\"$(printf 't%.0s' {1..129})\",\"data\":{}}"
	'empty turn id|{"type":"turn/start","turn":"","data":{}}'
	'data not an object|{"type":"user/message","data":"x"}'
	'valid line then a bad one|{"type":"user/message","data":{"text":"ok"}}\n{"type":"user/message","data":{}}'
)
# rejects DESC INPUT [MESSAGE]: usage (2) for INPUT (printf %b), appended to
# the existing log (left unchanged) or as a new session; the error names
# MESSAGE when given.
rejects() {
	printf '%b\n' "$2" >"$T/bad"
	expect_code 2 "append rejects input ($1)" "$CAIRN" log append "$id" --expect-seq 8 <"$T/bad"
	[ -z "${3:-}" ] || check "... ($1) the message names it" grep -qF "$3" <<<"$ERR"
	check "... ($1) log unchanged" cmp -s "$f" "$T/before"
	expect_code 2 "append --new rejects input ($1)" "$CAIRN" log append --new <"$T/bad"
}
for b in "${bad[@]}"; do
	rejects "${b%%|*}" "${b#*|}"
done
# Input that would not be stored as given: usage (2), naming the field.
unstorable=(
	'data.x: number out of range|{"type":"user/message","data":{"text":"x","x":1e400,"y":-1e400,"z":1e-400}}'
	'data.y: number out of range|{"type":"user/message","data":{"text":"x","y":-1e400}}'
	'data.z: number too small|{"type":"user/message","data":{"text":"x","z":1e-400}}'
	'data.args.n[1]: number out of range|{"type":"tool/call","turn":"t1","data":{"call_id":"c","name":"n","args":{"n":[1,2e308]}}}'
	'line 2: "turn" is null|{"type":"user/message","data":{"text":"ok"}}\n{"type":"user/message","turn":null,"data":{"text":"x"}}'
)
for b in "${unstorable[@]}"; do
	rejects "${b%%|*}" "${b#*|}" "${b%%|*}"
done
# A data that is not an object is refused, even for a type whose fields
# are all optional (it is not read as {}).
for d in null '[]' '"x"' 7 true; do
	rejects "session/meta data $d" "{\"type\":\"session/meta\",\"data\":$d}" 'invalid "data"'
done
printf '\xff\xfe\n' >"$T/bad"
expect_code 2 "append rejects input that is not UTF-8" "$CAIRN" log append "$id" --expect-seq 8 <"$T/bad"
check "... log unchanged" cmp -s "$f" "$T/before"
check "rejected --new batches created no session" test "$(nsessions "$CAIRN_HOME")" -eq "$n0"
check "rejected batches left no files behind" test -z "$(find "$CAIRN_HOME" -name '*.tmp')"

expect_code 0 "an empty batch is a no-op" "$CAIRN" log append "$id" --expect-seq 8 </dev/null
check "... log unchanged" cmp -s "$f" "$T/before"
check "... prints the unchanged next seq" test "$OUT" = "$id 8"
printf '\n  \n' >"$T/blank"
expect_code 0 "blank lines only are an empty batch" "$CAIRN" log append "$id" --expect-seq 8 <"$T/blank"
check "... log unchanged" cmp -s "$f" "$T/before"
expect_code 0 "an empty batch with --new" "$CAIRN" log append --new </dev/null
check "... creates no session" test "$(nsessions "$CAIRN_HOME")" -eq "$n0"

printf '%s\n' '{"type":"x/future","ignorable":true,"data":{"k":1}}' "$MSG" >"$T/ign"
expect_code 0 "an unknown type marked ignorable is accepted" "$CAIRN" log append "$id" --expect-seq 8 <"$T/ign"
check "... and takes a seq" test "$OUT" = "$id 10"
expect_code 0 "... log cat" "$CAIRN" log cat "$id"
check "... readers skip it" pyl 'all(e["type"]!="x/future" for e in L) and L[-1]["seq"]==9 and L[-2]["seq"]==7'
expect_code 0 "... inspect counts it out of events" "$CAIRN" inspect --json "$id"
check "... inspect: next_seq 10, 9 events" pyj 'v["next_seq"]==10 and v["events"]==9 and v["status"]=="ok"'

# The edges of a double are stored as the same numbers.
EDGE='{"type":"user/message","data":{"text":"edges","n":[5e-324,1e-320,1.7976931348623157e308,-1.7976931348623157e308,0e-999,-0.0,1e-300]}}'
expect_code 0 "numbers a double holds, subnormal ones and zeros included, are accepted" "$CAIRN" log append --new <<<"$EDGE"
expect_code 0 "... log cat" "$CAIRN" log cat "${OUT%% *}"
check "... read back as the same doubles" pyl 'L[-1]["data"]["n"]==[5e-324,1e-320,1.7976931348623157e308,-1.7976931348623157e308,0.0,-0.0,1e-300]'

# A big batch: several zstd blocks in one frame.
python3 -c '
import json
for i in range(40):
    print(json.dumps({"type":"assistant/text","turn":"t1","data":{"text":"%d "%i + "".join(chr(33+(i*j)%90) for j in range(9000))}}))' >"$T/big"
expect_code 0 "a batch of 360 KB is one append" "$CAIRN" log append "$id" --expect-seq 10 <"$T/big"
check "... next seq 50" test "$OUT" = "$id 50"
expect_code 0 "... log cat" "$CAIRN" log cat "$id"
check "... the events read back exactly" pyl '[e["data"] for e in L[-40:]]==[json.loads(x)["data"] for x in open(A[0])]' "$T/big"

# --- ids and prefixes ------------------------------------------------------

P="$T/prefix-root"
expect_code 0 "prefix: first session" "$CAIRN" --data-dir "$P" log append --new --no-cwd <<<"$MSG"
pa=${OUT%% *}
expect_code 0 "prefix: second session" "$CAIRN" --data-dir "$P" log append --new --no-cwd <<<"$MSG"
pb=${OUT%% *}
k=0
while [ "${pa:k:1}" = "${pb:k:1}" ]; do k=$((k + 1)); done
common=${pa:0:k}
check "two ULIDs made in a row share a prefix" test "$k" -ge 1
expect_code 2 "an ambiguous prefix is a usage error (2)" "$CAIRN" --data-dir "$P" log cat "$common"
check "... listing both candidates" bash -c 'grep -q "$1" <<<"$3" && grep -q "$2" <<<"$3"' _ "$pa" "$pb" "$ERR"
expect_code 2 "inspect: ambiguous prefix (2)" "$CAIRN" --data-dir "$P" inspect "$common"
expect_code 0 "a unique prefix resolves (log cat)" "$CAIRN" --data-dir "$P" log cat "${pa:0:k+1}"
check "... to the right session" pyl 'L[0]["data"]["id"]==A[0]' "$pa"
expect_code 0 "a unique prefix resolves (inspect)" "$CAIRN" --data-dir "$P" inspect --json "${pb:0:k+1}"
check "... to the right session" pyj 'v["id"]==A[0]' "$pb"
expect_code 0 "a unique prefix resolves (append)" "$CAIRN" --data-dir "$P" log append "${pb:0:k+1}" --expect-seq 2 <<<"$MSG"
check "... appended to the right session" test "$OUT" = "$pb 3"
expect_code 3 "an unknown prefix is missing (3)" "$CAIRN" --data-dir "$P" log cat "${pa:0:k}x"
# Sessions with chosen ids, one a prefix of the other (written without cairn).
craft "$P" _no-cwd ab
craft "$P" _no-cwd abc
expect_code 0 "a crafted log is readable" "$CAIRN" --data-dir "$P" inspect --json ab
check "... ok with 2 events" pyj 'v["status"]=="ok" and v["events"]==2 and v["id"]=="ab"'
expect_code 0 "an exact id wins over a prefix" "$CAIRN" --data-dir "$P" log cat ab
check "... it is session ab" pyl 'L[0]["data"]["id"]=="ab" and L[1]["data"]["text"]=="I am ab"'
expect_code 0 "the longer id resolves too" "$CAIRN" --data-dir "$P" log cat abc
check "... it is session abc" pyl 'L[0]["data"]["id"]=="abc"'
expect_code 2 "their common prefix is ambiguous" "$CAIRN" --data-dir "$P" log cat a
check "... listing ab and abc" bash -c 'grep -qw ab <<<"$1" && grep -qw abc <<<"$1"' _ "$ERR"
expect_code 0 "append to the exact id" "$CAIRN" --data-dir "$P" log append ab --expect-seq 2 <<<"$MSG"
check "... went to ab" test "$OUT" = "ab 3"
craft "$P" _no-cwd zz
mv "$P/sessions/_no-cwd/zz" "$P/sessions/_no-cwd/yy"
cp "$P/sessions/_no-cwd/yy/session.jsonl.zst" "$T/before"
expect_code 4 "a log whose header id is not its directory's: append refused (4)" \
	"$CAIRN" --data-dir "$P" log append yy --expect-seq 2 <<<"$MSG"
check "... unchanged" cmp -s "$P/sessions/_no-cwd/yy/session.jsonl.zst" "$T/before"
expect_code 4 "... inspect by id reports it corrupt" "$CAIRN" --data-dir "$P" inspect --json yy
check "... naming the session it holds" pyj 'v["status"]=="corrupt" and "zz" in v["error"]["message"]'
expect_code 4 "... log cat by id refuses it" "$CAIRN" --data-dir "$P" log cat yy
expect_code 4 "... repair refuses it" "$CAIRN" --data-dir "$P" repair yy
check "... still unchanged" cmp -s "$P/sessions/_no-cwd/yy/session.jsonl.zst" "$T/before"
expect_code 2 "an id with '..' is a usage error" "$CAIRN" log cat 'a..b'
expect_code 2 "'..' as an id is a usage error" "$CAIRN" inspect ..
expect_code 2 "a 65-character id is a usage error" "$CAIRN" log cat "$(printf 'a%.0s' {1..65})"

# --- PATH arguments ----------------------------------------------------------

E="$T/elsewhere"
mkdir -p "$E"
cp "$f" "$E/copy.bin"
chmod 644 "$E/copy.bin"
snapshot "$E" >"$T/snap1"
expect_code 0 "inspect PATH (any name, any directory)" "$CAIRN" inspect --json "$E/copy.bin"
check "... reads it as it is" pyj 'v["status"]=="ok" and v["id"]==A[0] and v["next_seq"]==50' "$id"
expect_code 0 "inspect PATH (text)" "$CAIRN" inspect "$E/copy.bin"
check "... says status ok" grep -q '^status: ok' <<<"$OUT"
expect_code 0 "log cat PATH" "$CAIRN" log cat "$E/copy.bin"
catp=$OUT
expect_code 0 "log cat ID" "$CAIRN" log cat "$id"
check "log cat PATH = log cat ID" test "$catp" = "$OUT"
expect_code 0 "a relative PATH (./name)" bash -c 'cd "$1" && "$2" log cat ./copy.bin' _ "$E" "$CAIRN"
check "... same events" test "$catp" = "$OUT"
check "read-only commands leave the file byte-identical" cmp -s "$f" "$E/copy.bin"
check "... and create or change nothing (no lock, same mode)" diff -q "$T/snap1" <(snapshot "$E")
ln -s copy.bin "$E/link.zst"
snapshot "$E" >"$T/snap1"
expect_code 4 "inspect of a symlink PATH is refused (corrupt, as in the store)" "$CAIRN" inspect --json "$E/link.zst"
check "... status corrupt, error says symlink" pyj 'v["status"]=="corrupt" and v["error"]["class"]=="corrupt" and "symlink" in v["error"]["message"]'
expect_code 4 "log cat of a symlink PATH is refused" "$CAIRN" log cat "$E/link.zst"
check "... prints nothing" test -z "$OUT"
expect_code 4 "repair of a symlink PATH is refused" "$CAIRN" repair "$E/link.zst"
expect_code 4 "append to a symlink PATH is refused" "$CAIRN" log append "$E/link.zst" --expect-seq 50 <<<"$MSG"
check "... the target is untouched" cmp -s "$f" "$E/copy.bin"
# (A refused write may leave an empty session.lock behind: see the report.)
check "... nothing else created or changed" diff <(grep -v '/session.lock \|elsewhere ' "$T/snap1") <(snapshot "$E" | grep -v '/session.lock \|elsewhere ')
mkfifo "$E/fifo.zst"
# Where a log is expected, anything but a regular file is corrupt (4), as in the store.
expect_code 4 "inspect of a FIFO is refused (without blocking)" timeout 10 "$CAIRN" inspect "$E/fifo.zst"
expect_code 4 "log cat of a FIFO is refused" timeout 10 "$CAIRN" log cat "$E/fifo.zst"
expect_code 4 "log cat of a directory is refused" "$CAIRN" log cat "$E/"
expect_code 4 "log cat of /dev/null is refused" "$CAIRN" log cat /dev/null
expect_code 3 "inspect of a missing PATH: missing (3)" "$CAIRN" inspect --json "$E/nope.zst"
check "... status missing" pyj 'v["status"]=="missing" and v["error"]["class"]=="missing"'
expect_code 3 "log cat of a missing PATH: missing (3)" "$CAIRN" log cat "$E/nope.zst"
expect_code 3 "append to a missing PATH: missing (3)" "$CAIRN" log append "$E/nope.zst" --expect-seq 1 <<<"$MSG"
check "... creates nothing" test ! -e "$E/nope.zst"
cp "$f" "$T/rootcopy"
expect_code 0 "append to a PATH" "$CAIRN" log append "$E/copy.bin" --expect-seq 50 <<<"$MSG"
check "... prints the id and next seq" test "$OUT" = "$id 51"
check "... locks session.lock in its directory (0600)" test "$(stat -c %a "$E/session.lock" 2>/dev/null)" = 600
check "... the session under the root is untouched" cmp -s "$f" "$T/rootcopy"
expect_code 0 "log cat of the appended PATH" "$CAIRN" log cat "$E/copy.bin"
check "... holds the new event last" pyl 'L[-1]["seq"]==50 and L[-1]["data"]=={"text":"hello"}'
expect_code 6 "append to a PATH with the wrong --expect-seq" "$CAIRN" log append "$E/copy.bin" --expect-seq 50 <<<"$MSG"

# A symlink or the wrong file type where a session file belongs.
S="$T/sym-root"
expect_code 0 "symlinks in the store: a session" "$CAIRN" --data-dir "$S" log append --new --no-cwd <<<"$MSG"
sid=${OUT%% *}
sf=$(logfile "$sid" "$S")
mv "$sf" "$T/real.zst"
ln -s "$T/real.zst" "$sf"
cp "$T/real.zst" "$T/before"
expect_code 4 "a symlinked session log: inspect refuses it (corrupt)" "$CAIRN" --data-dir "$S" inspect "$sid"
expect_code 4 "... log cat refuses it" "$CAIRN" --data-dir "$S" log cat "$sid"
check "... prints nothing" test -z "$OUT"
expect_code 4 "... append refuses it" "$CAIRN" --data-dir "$S" log append "$sid" --expect-seq 2 <<<"$MSG"
expect_code 4 "... repair refuses it" "$CAIRN" --data-dir "$S" repair "$sid"
check "... the symlink's target is untouched" cmp -s "$T/real.zst" "$T/before"
rm "$sf"
mkdir -m 700 "$sf"
expect_code 4 "a directory where the log belongs is refused" "$CAIRN" --data-dir "$S" log cat "$sid"
rmdir "$sf"
cp "$T/real.zst" "$sf"
expect_code 0 "a regular log back in place reads again" "$CAIRN" --data-dir "$S" log cat "$sid"
sd=$(dirname "$sf")
mv "$sd" "$T/realdir"
ln -s "$T/realdir" "$sd"
expect_code 4 "a symlinked session directory is refused (log cat)" "$CAIRN" --data-dir "$S" log cat "$sid"
expect_code 4 "a symlinked session directory is refused (append)" "$CAIRN" --data-dir "$S" log append "$sid" --expect-seq 2 <<<"$MSG"

# A bit flipped in the last acknowledged frame: an append by id, which
# starts at the end the catalog's watermark names, checks that frame first
# and refuses (corrupt, 4) rather than acknowledge a batch after damage.
flip() { python3 -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^1]))' "$1" "$2"; }
W="$T/flip-root"
expect_code 0 "a session for the flipped last frame" "$CAIRN" --data-dir "$W" log append --new --no-cwd <<<"$MSG"
wid=${OUT%% *}
wf=$(logfile "$wid" "$W")
s0=$(stat -c %s "$wf")
LONG="{\"type\":\"user/message\",\"data\":{\"text\":\"$(seq 1 200 | tr '\n' ' ')\"}}"
expect_code 0 "... its last batch" "$CAIRN" --data-dir "$W" log append "$wid" --expect-seq 2 <<<"$LONG"
expect_code 0 "... an append after an intact last frame" "$CAIRN" --data-dir "$W" log append "$wid" --expect-seq 3 <<<"$LONG"
s0=$(stat -c %s "$wf")
expect_code 0 "... and one more" "$CAIRN" --data-dir "$W" log append "$wid" --expect-seq 4 <<<"$LONG"
s1=$(stat -c %s "$wf")
flip "$wf" $(((s0 + s1) / 2))
cp "$wf" "$T/before"
expect_code 4 "append by id after a bit flip in the last frame: corrupt (4)" \
	"$CAIRN" --data-dir "$W" log append "$wid" --expect-seq 5 <<<"$MSG"
check "... the message names the damage" grep -q 'corrupt\|checksum' <<<"$ERR"
check "... the log is unchanged, byte for byte" cmp -s "$wf" "$T/before"
# The persistence FIFO (here through rename) reads a log whole, with its
# watermark, when it opens it: the same damage fails closed there too.
expect_code 4 "a FIFO append (rename) after the bit flip: corrupt (4)" \
	"$CAIRN" --data-dir "$W" rename "$wid" "a title"
check "... the log is unchanged, byte for byte" cmp -s "$wf" "$T/before"

finish
