#!/usr/bin/env bash
# test_sessions_cli.sh — `cairn sessions` and `cairn search` from the command
# line: the JSON shape, titles, ordering, --project/--limit/--all/--trash,
# every listed status (idle, interrupted, corrupt, unsupported), logs written
# without cairn, text output; full-text search with words, phrases, ranking,
# limits, the trash, text without spaces, tool output and hostile queries;
# ID prefixes. Needs python3 (JSON checks, byte flips) and zstd (crafted logs).
source "$(dirname "$0")/lib.sh"

# --- helpers -------------------------------------------------------------

# pyj EXPR [ARG...]: true when the python EXPR holds for v = the JSON in
# $OUT (A = the ARGs); of search --json, top is the object and v its hits.
# S(id) is the session object of id in a listing.
pyj() {
	python3 -c 'import json,sys
A=sys.argv[2:]; top=v=json.load(sys.stdin)
if isinstance(top,dict): v=top["hits"]
def S(i): return [s for s in v if s["id"]==i][0]
def ids(): return [s["id"] for s in v]
def hits(): return [(h["session"],h["role"]) for h in v]
sys.exit(0 if eval(sys.argv[1]) else 1)' "$@" <<<"$OUT"
}
logfile() { local m=("$CAIRN_HOME"/sessions/*/"$1"/session.jsonl.zst); [ -f "${m[0]}" ] && echo "${m[0]}"; }
flip() { python3 -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^0xff]))' "$1" "$2"; }
# jstr TEXT: TEXT as a JSON string.
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
# turn TURN PROMPT [ASSISTANT [TOOL-OUTPUT]] [open]: the JSON lines of one turn.
turn() {
	echo "{\"type\":\"turn/start\",\"turn\":\"$1\",\"data\":{}}"
	echo "{\"type\":\"user/message\",\"turn\":\"$1\",\"data\":{\"text\":$(jstr "$2")}}"
	[ -n "${3:-}" ] && echo "{\"type\":\"assistant/text\",\"turn\":\"$1\",\"data\":{\"text\":$(jstr "$3")}}"
	if [ -n "${4:-}" ]; then
		echo "{\"type\":\"tool/call\",\"turn\":\"$1\",\"data\":{\"call_id\":\"c-$1\",\"name\":\"sh\",\"args\":{}}}"
		echo "{\"type\":\"tool/result\",\"turn\":\"$1\",\"data\":{\"call_id\":\"c-$1\",\"status\":\"ok\",\"output\":$(jstr "$4")}}"
	fi
	[ "${5:-}" = open ] || echo "{\"type\":\"turn/end\",\"turn\":\"$1\",\"data\":{\"outcome\":\"completed\"}}"
}
# new VAR CWD-OPTION TURN-ARGS...: a new session through the CLI; VAR = its id.
new() {
	local var=$1 cwdopt=$2
	shift 2
	local out
	sleep 0.01 # distinct activity times
	if [ "$cwdopt" = --no-cwd ]; then
		out=$(turn "t1" "$@" | "$CAIRN" log append --new --no-cwd)
	else
		out=$(turn "t1" "$@" | "$CAIRN" log append --new --cwd "$cwdopt")
	fi
	[ -n "$out" ] || not_ok "create session $var" "log append failed"
	printf -v "$var" '%s' "${out%% *}"
	eval "${var}_N=${out##* }"
}
# frame FILE LINE...: append the lines as one zstd frame (checksum, content size).
frame() {
	local f=$1
	shift
	printf '%s\n' "$@" >"$T/frame.txt"
	zstd -q -c --check --content-size "$T/frame.txt" >>"$f"
}
# craft KEY ID FORMAT PROMPT: a log written without cairn.
craft() {
	mkdir -p "$CAIRN_HOME/sessions/$1/$2"
	local f="$CAIRN_HOME/sessions/$1/$2/session.jsonl.zst"
	frame "$f" "{\"seq\":0,\"t\":1000,\"type\":\"session/header\",\"data\":{\"format\":$3,\"id\":\"$2\",\"created_at\":1000,\"cwd\":null}}"
	frame "$f" "{\"seq\":1,\"t\":2000,\"type\":\"user/message\",\"data\":{\"text\":$(jstr "$4")}}"
	frame "$f" "{\"seq\":2,\"t\":3000,\"type\":\"assistant/text\",\"data\":{\"text\":\"an answer\"}}"
}
list() { expect_code 0 "sessions --json $*" "$CAIRN" sessions --json "$@"; }
search() { expect_code 0 "search $*" "$CAIRN" search --json "$@"; }
KEYS='all(k in s for s in v for k in ("id","title","cwd","created_at","updated_at","turns","pinned","status","deleted_at"))'
SORTED='[ (s["pinned"],s["updated_at"]) for s in v ] == sorted([ (s["pinned"],s["updated_at"]) for s in v ], reverse=True)'

# --- an empty root ------------------------------------------------------------

list
check "an empty root lists []" test "$OUT" = "[]"
expect_code 0 "sessions (text) on an empty root" "$CAIRN" sessions
check "... says there are none" grep -q "no sessions" <<<"$OUT"

# --- titles, fields and order ---------------------------------------------------

P1=$T/proj1 P2=$T/proj2
mkdir -p "$P1" "$P2"
LONG=$(printf 'word%02d ' $(seq 1 30))
CJK=$(python3 -c 'print("数据"*60)')
new S1 "$P1" $'  Fix\tthe   build\n\n  on   CI  '
new S2 "$P2" "$LONG"
new S3 "$P1" "$CJK"
new S4 --no-cwd "an open turn" "" "" open

list
check "sessions --json is one JSON array of 4 sessions" pyj 'isinstance(v,list) and len(v)==4'
check "... every object has id, title, cwd, created_at, updated_at, turns, pinned, status, deleted_at" pyj "$KEYS"
check "... newest activity first" pyj 'ids()==A' "$S4" "$S3" "$S2" "$S1"
check "... the title is the first prompt with whitespace collapsed" pyj 'S(A[0])["title"]=="Fix the build on CI"' "$S1"
check "... a long prompt: at most 80 characters ending in an ellipsis, a prefix of the prompt" \
	pyj '(t:=S(A[0])["title"]) and len(t)<=80 and len(t)>=70 and t.endswith("\u2026") and " ".join(A[1].split()).startswith(t[:-1])' "$S2" "$LONG"
check "... the same counting characters, not bytes (CJK)" \
	pyj '(t:=S(A[0])["title"]) and len(t)<=80 and len(t)>=75 and t.endswith("\u2026") and A[1].startswith(t[:-1])' "$S3" "$CJK"
check "... cwd as given with --cwd, null with --no-cwd" \
	pyj 'S(A[0])["cwd"]==A[1] and S(A[2])["cwd"]==A[3] and S(A[4])["cwd"] is None' "$S1" "$P1" "$S2" "$P2" "$S4"
check "... times, one turn, not pinned, not deleted" \
	pyj 'all(s["created_at"]>0 and s["updated_at"]>=s["created_at"] and s["turns"]==1 and s["pinned"] is False and s["deleted_at"] is None for s in v)'
check "... status idle, interrupted for an open turn" \
	pyj 'S(A[0])["status"]=="interrupted" and all(S(i)["status"]=="idle" for i in A[1:])' "$S4" "$S1" "$S2" "$S3"

# ID prefixes (few sessions yet, so every candidate is listed).
AMB=$(python3 -c 'import os,sys; print(os.path.commonprefix(sys.argv[1:]))' "$S1" "$S2")
expect_code 2 "an ambiguous prefix is a usage error" "$CAIRN" log cat "$AMB"
check "... that lists the candidates" bash -c 'grep -q "$1" <<<"$3" && grep -q "$2" <<<"$3"' _ "$S1" "$S2" "$ERR"
expect_code 2 "... for rename too" "$CAIRN" rename "$AMB" "x"
check "... which changed no title" bash -c '! "$1" log cat "$2" | grep -q session/meta' _ "$CAIRN" "$S1"
expect_code 0 "a unique prefix works for log cat" "$CAIRN" log cat "${S1:0:20}"
check "... of the right session" grep -q 'Fix' <<<"$OUT"
expect_code 3 "a prefix of no session exits 3" "$CAIRN" log cat "ZZZZZZZZ"

# Activity moves a session up; a second prompt keeps the title.
turn t2 "a second prompt" "an answer" | "$CAIRN" log append "$S1" --expect-seq "$S1_N" >/dev/null
list
check "appending to the oldest session moves it to the top" pyj 'ids()==A' "$S1" "$S4" "$S3" "$S2"
check "... two turns, the title still from the first prompt" pyj 'S(A[0])["turns"]==2 and S(A[0])["title"]=="Fix the build on CI"' "$S1"

expect_code 0 "rename by a unique prefix" "$CAIRN" rename "${S2:0:20}" "Explicit name"
turn t2 "yet another prompt" | "$CAIRN" log append "$S2" --expect-seq $((S2_N + 1)) >/dev/null
list
check "an explicit title wins over prompts before and after it" pyj 'S(A[0])["title"]=="Explicit name"' "$S2"
# --json gives a title exactly as written, its controls escaped; the text
# listing shows one short line: whitespace collapsed, controls dropped.
expect_code 0 "rename to a title holding controls" "$CAIRN" rename "$S2" "$(printf 'Tab\there\nnew \033[31mred\001')"
list
check "... --json gives it exactly" pyj 'S(A[0])["title"]==A[1]' "$S2" "$(printf 'Tab\there\nnew \033[31mred\001')"
check "... as JSON escapes, no raw control written" bash -c '! LC_ALL=C grep -q "[[:cntrl:]]" <<<"$(tr -d "\n" <<<"$1")"' _ "$OUT"
expect_code 0 "... sessions (text)" "$CAIRN" sessions
check "... shows it normalised: whitespace collapsed, controls dropped" grep -qF "Tab here new [31mred  " <<<"$OUT"
check "... no raw control on the terminal" bash -c '! LC_ALL=C grep -q "[[:cntrl:]]" <<<"$1"' _ "$OUT"
expect_code 0 "... rename back" "$CAIRN" rename "$S2" "Explicit name"
expect_code 0 "pin the least recent session" "$CAIRN" pin "$S3"
list
check "pinned first" pyj 'ids()[0]==A[0] and S(A[0])["pinned"] is True' "$S3"
check "... then by activity, newest first" pyj "$SORTED"

# --- --project, --limit -----------------------------------------------------------

list --project "$P1"
check "--project DIR lists the sessions started there" pyj 'sorted(ids())==sorted(A)' "$S1" "$S3"
OUT=$(cd "$T" && "$CAIRN" sessions --json --project proj2)
check "--project with a relative DIR" pyj 'ids()==A' "$S2"
list --project "$T"
check "--project of a directory without sessions: []" pyj 'v==[]'
list
FULL=$OUT
list --limit 2
check "--limit 2: the first two of the listing" pyj 'ids()==[s["id"] for s in json.loads(A[0])][:2]' "$FULL"
list --limit 1 --project "$P1"
check "--limit with --project" pyj 'len(v)==1 and v[0]["cwd"]==A[0]' "$P1"
for bad in 0 -1 x ""; do expect_code 2 "--limit '$bad' is a usage error" "$CAIRN" sessions --limit "$bad"; done
expect_code 2 "--limit without a value" "$CAIRN" sessions --limit
expect_code 2 "an unknown option" "$CAIRN" sessions --frob

# --- the trash -------------------------------------------------------------------

expect_code 0 "rm a session" "$CAIRN" rm "$S2"
list
check "a trashed session is not listed" pyj 'A[0] not in ids() and len(v)==3' "$S2"
list --all
check "--all lists it with deleted_at set, the others with null" \
	pyj 'len(v)==4 and isinstance(S(A[0])["deleted_at"],(int,float)) and S(A[0])["deleted_at"]>0 and all(s["deleted_at"] is None for s in v if s["id"]!=A[0])' "$S2"
list --trash
check "--trash lists only the trashed one" pyj 'ids()==A and v[0]["deleted_at"]>0' "$S2"

# --- logs written without cairn, corrupt, unsupported -------------------------------

CR=01J0000000000000000000CRFT
craft crafted-key "$CR" 1 "  crafted   prompt "
list
check "a log dropped into sessions/<key>/<id>/ is listed on the next listing" \
	pyj 'S(A[0])["title"]=="crafted prompt" and S(A[0])["status"]=="idle" and S(A[0])["cwd"] is None and len(v)==4' "$CR"

BAD=01J0000000000000000000BADX
craft crafted-key "$BAD" 1 "flipped before cairn saw it"
flip "$(logfile "$BAD")" 12
list
check "a log corrupt from the start: listed with status corrupt" pyj 'S(A[0])["status"]=="corrupt"' "$BAD"

new S5 --no-cwd "soon to be flipped" "answer one" "tool out"
echo '{"type":"assistant/text","turn":"t1","data":{"text":"more"}}' | "$CAIRN" log append "$S5" --expect-seq "$S5_N" >/dev/null
list
check "a new session is idle before the flip" pyj 'S(A[0])["status"]=="idle"' "$S5"
flip "$(logfile "$S5")" 20
list
check "a byte flipped in an early frame of a known log: listed with status corrupt" \
	pyj 'S(A[0])["status"]=="corrupt"' "$S5"
check "... the listing still lists every other session" pyj 'len(v)==6 and all(i in ids() for i in A)' "$S1" "$S3" "$S4" "$CR" "$BAD"

V2=01J0000000000000000000FMT2
mkdir -p "$CAIRN_HOME/sessions/other/$V2"
echo "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":2,\"id\":\"$V2\",\"created_at\":1,\"cwd\":null}}" >"$T/v2.txt"
zstd -q -c --check "$T/v2.txt" >"$CAIRN_HOME/sessions/other/$V2/session.jsonl.zst"
list
check "a log of format 2: listed with status unsupported" pyj 'S(A[0])["status"]=="unsupported"' "$V2"
check "... beside every other session, in order" pyj 'len(v)==7 and '"$SORTED"
LISTED=$OUT

expect_code 0 "sessions (text) exits 0 with damaged logs" "$CAIRN" sessions
check "... one line per session, in the order of --json" \
	python3 -c 'import json,sys; L=sys.argv[2].splitlines(); v=json.loads(sys.argv[1]); sys.exit(0 if len(L)==len(v) and all(l.split()[0]==s["id"] for l,s in zip(L,v)) else 1)' "$LISTED" "$OUT"
check "... with the statuses" bash -c 'grep "^$1 " <<<"$3" | grep -q unsupported && grep "^$2 " <<<"$3" | grep -q interrupted' _ "$V2" "$S4" "$OUT"
expect_code 0 "sessions --all (text)" "$CAIRN" sessions --all
check "... one line per session, the trashed one included" \
	bash -c '[ "$(wc -l <<<"$1")" -eq 8 ] && grep -q "^$2 " <<<"$1"' _ "$OUT" "$S2"

# --- search ------------------------------------------------------------------------

new Q1 --no-cwd "zygote zygote zygote kumquat" "salt and pepper near the river" "xylophone result line"
new Q2 --no-cwd "zygote kumquat mention" "the quick brown fox"
new Q3 --no-cwd "quokka habitat"
new Q4 --no-cwd "quokka habitat"
new Q5 --no-cwd "我们讨论数据库的索引设计" "データベースの設計について"

search zygote
check "search --json is an object: hits (objects with session, turn, role, snippet), partial, searched, messages" \
	pyj 'isinstance(v,list) and len(v)==2 and all(k in h for h in v for k in ("session","turn","role","snippet")) and top["partial"] is False and top["searched"]==top["messages"]>0'
check "... more occurrences rank first, though older" pyj 'hits()==[(A[0],"user"),(A[1],"user")]' "$Q1" "$Q2"
check "... turn and snippet of the hit" pyj 'v[0]["turn"]=="t1" and "zygote" in v[0]["snippet"]'
search quokka habitat
check "equally relevant hits: the newest first" pyj 'hits()==[(A[0],"user"),(A[1],"user")]' "$Q4" "$Q3"
search zygote mention
check "words: all required" pyj 'hits()==[(A[0],"user")]' "$Q2"
search '"quick brown"'
check "a quoted phrase matches" pyj 'hits()==[(A[0],"assistant")]' "$Q2"
search '"brown quick"'
check "... in its order only" pyj 'v==[]'
search brown quick
check "... while words match in any order" pyj 'hits()==[(A[0],"assistant")]' "$Q2"
search --limit 1 zygote
check "--limit 1: one hit, the best" pyj 'hits()==[(A[0],"user")]' "$Q1"
expect_code 2 "search --limit 0 is a usage error" "$CAIRN" search --limit 0 zygote
search xylophone
check "tool output is indexed (role tool)" pyj 'hits()==[(A[0],"tool")] and v[0]["turn"]=="t1"' "$Q1"
search 数据库
check "Chinese without spaces: 数据库 found" pyj 'hits()==[(A[0],"user")] and "数据库" in v[0]["snippet"]' "$Q5"
search 索引
check "... 索引 (two characters) found" pyj 'hits()==[(A[0],"user")]' "$Q5"
search 数据库 设计
check "... two terms" pyj 'hits()==[(A[0],"user")]' "$Q5"
search 数据表
check "... absent text not found" pyj 'v==[]'
search 設計
check "Japanese: 設計 found in the assistant's text" pyj 'hits()==[(A[0],"assistant")]' "$Q5"
search データベース
check "... katakana too" pyj 'hits()==[(A[0],"assistant")]' "$Q5"
search AND
check "AND is a plain word" pyj 'hits()==[(A[0],"assistant")]' "$Q1"
search 'NEAR('
check "NEAR( is a plain word" pyj 'hits()==[(A[0],"assistant")]' "$Q1"
for q in '*' '-' '(' ')' 'a"b' 'NOT' '^' ':' '"unclosed' 'OR OR' '"' '""'; do
	OUT=$("$CAIRN" search --json "$q" 2>"$T/err")
	rc=$?
	if [ "$q" = '"' ] || [ "$q" = '""' ]; then
		# Nothing but quotes is an empty query: a usage error is fine too.
		check "hostile query '$q': exit 0 (or 2 as an empty query), no SQL error" \
			bash -c '{ [ "$1" -eq 0 ] || [ "$1" -eq 2 ]; } && ! grep -qiE "fts5|syntax|sqlite|catalog" "$2"' _ "$rc" "$T/err"
	else
		check "hostile query '$q': exit 0, a JSON object of hits, no SQL error" \
			bash -c '[ "$1" -eq 0 ] && python3 -c "import json,sys; assert isinstance(json.loads(sys.argv[1])[\"hits\"],list)" "$2" && ! grep -qiE "fts5|syntax|sqlite" "$3"' _ "$rc" "$OUT" "$T/err"
	fi
done
# Repeated terms are dropped: the same hits as once. The caps: 1024 bytes
# and 16 words work, one more of either is a usage error naming the cap.
search zygote
ONCE=$OUT
search $(printf 'zygote %.0s' {1..140})
check "a term repeated 140 times: the same hits as once" test "$OUT" = "$ONCE"
search "$(printf 'Zygote ZYGOTE %.0s' {1..70})"
check "... in other cases too" test "$OUT" = "$ONCE"
words16="zygote $(printf 'w%d ' {2..16})"
search $words16
check "16 words: searched" pyj 'v==[]'
expect_code 2 "17 words: a usage error" "$CAIRN" search --json $words16 w17
check "... naming the cap" grep -q 'limit of 16 words' <<<"$ERR"
expect_code 2 "a phrase of 17 words: a usage error" "$CAIRN" search --json "\"$words16 w17\""
check "... naming the cap" grep -q 'limit of 16 words' <<<"$ERR"
cjk16=$(python3 -c 'print("数据"+"库"*14)')
search "$cjk16"
check "16 characters without spaces: searched" pyj 'v==[]'
expect_code 2 "17 characters without spaces: a usage error" "$CAIRN" search --json "${cjk16}库"
check "... naming the cap" grep -q 'limit of 16 words' <<<"$ERR"
q1024="zygote$(printf '%1018s' '')"
search "$q1024"
check "a query of 1024 bytes: searched" test "$OUT" = "$ONCE"
expect_code 2 "a query of 1025 bytes: a usage error" "$CAIRN" search --json "$q1024 "
check "... naming the cap" grep -q 'limit of 1024 bytes' <<<"$ERR"
# An interrupted turn's text waits outside the word index until its turn
# ends; a search finds it all the same, ranked with the rest.
new Q6 --no-cwd "wombat wombat wombat burrow" "digging deep" "" open
new Q7 --no-cwd "wombat facts for a long afternoon"
search wombat
check "an open turn's text is found, ranked with indexed text" \
	pyj 'hits()==[(A[0],"user"),(A[1],"user")] and "wombat" in v[0]["snippet"]' "$Q6" "$Q7"
search digging
check "... its streamed answer too" pyj 'hits()==[(A[0],"assistant")]' "$Q6"
expect_code 0 "end the open turn" "$CAIRN" log append "$Q6" --expect-seq "$Q6_N" \
	<<<'{"type":"turn/end","turn":"t1","data":{"outcome":"completed"}}'
search wombat
check "... and once the turn ended, the same hits in the same order" \
	pyj 'hits()==[(A[0],"user"),(A[1],"user")]' "$Q6" "$Q7"

search kumquat
KQ=$OUT
search kumquat '('
check "a word of punctuation beside a real one hides nothing" test "$OUT" = "$KQ"
OUT=$("$CAIRN" search --json -- kumquat 2>/dev/null)
check "'--' ends the options and is not a search term" test "$OUT" = "$KQ"
expect_code 2 "an empty query exits 2" "$CAIRN" search ""
expect_code 2 "a blank query exits 2" "$CAIRN" search "   "
expect_code 2 "no query exits 2" "$CAIRN" search --json

expect_code 0 "rm a session that has hits" "$CAIRN" rm "$Q2"
search kumquat
check "search leaves out deleted sessions" pyj 'hits()==[(A[0],"user")]' "$Q1"
search --all kumquat
check "... unless --all" pyj 'sorted(hits())==sorted([(A[0],"user"),(A[1],"user")])' "$Q1" "$Q2"

expect_code 0 "search (text)" "$CAIRN" search zygote
check "... one line per hit: session, turn, role, snippet" \
	bash -c '[ "$(wc -l <<<"$1")" -eq 1 ] && grep -Eq "^$2 t1 user: .*zygote" <<<"$1"' _ "$OUT" "$Q1"
expect_code 0 "search (text) without hits" "$CAIRN" search nonexistentword
check "... says so" grep -q "no matches" <<<"$OUT"

# The work budget: in a root of its own, 21,000 messages each holding 15
# of 16 words (message i lacks word i % 16), all 16 in the first and the
# last. Reading a row of them costs about 15 index entries, so the 16
# words stop after about 16,700 of the newest messages and say so; the
# same words less one and a word only the first message has read it all.
BUDGET_HOME="$T/budget"
python3 - "$T/budget.jsonl" <<'PY'
import json, sys
w = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
with open(sys.argv[1], "w") as f:
    for i in range(21000):
        t = " ".join(x for k, x in enumerate(w) if i in (0, 20999) or k != i % 16)
        if i == 0:
            t += " zanzibar"
        for e in ({"type": "turn/start", "turn": "t%d" % i},
                  {"type": "user/message", "turn": "t%d" % i, "data": {"text": t}},
                  {"type": "turn/end", "turn": "t%d" % i, "data": {"outcome": "completed"}}):
            f.write(json.dumps(e) + "\n")
PY
expect_code 0 "21,000 messages in one append" env CAIRN_HOME="$BUDGET_HOME" "$CAIRN" log append --new --no-cwd <"$T/budget.jsonl"
BUDGET_WORDS="alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar"
expect_code 0 "search past the budget (text)" env CAIRN_HOME="$BUDGET_HOME" "$CAIRN" search $BUDGET_WORDS papa
check "... the newest match, then how far it searched" \
	bash -c '[ "$(wc -l <<<"$1")" -eq 2 ] && grep -Eq "^[0-9A-Z]{26} t20999 user: " <<<"$1" && grep -Eq "^searched the newest 1[5-7][0-9]{3} of 21000 messages; fewer or rarer words search further$" <<<"$1"' _ "$OUT"
expect_code 0 "search past the budget (--json)" env CAIRN_HOME="$BUDGET_HOME" "$CAIRN" search --json $BUDGET_WORDS papa
check "... partial, with how far it searched" \
	pyj 'top["partial"] is True and 15000 < top["searched"] < 18000 and top["messages"]==21000 and [h["turn"] for h in v]==["t20999"]'
FIRST=$OUT
expect_code 0 "... again" env CAIRN_HOME="$BUDGET_HOME" "$CAIRN" search --json $BUDGET_WORDS papa
check "... the same answer (a count of work, not a clock)" test "$OUT" = "$FIRST"
expect_code 0 "with a rare word instead of one common one" env CAIRN_HOME="$BUDGET_HOME" "$CAIRN" search --json $BUDGET_WORDS zanzibar
check "... the whole index is read: the oldest message, not partial" \
	pyj 'top["partial"] is False and top["searched"]==21000 and [h["turn"] for h in v]==["t0"]'
expect_code 0 "... and in text, no note" env CAIRN_HOME="$BUDGET_HOME" "$CAIRN" search $BUDGET_WORDS zanzibar
check "... one line" bash -c '[ "$(wc -l <<<"$1")" -eq 1 ] && grep -q " t0 user: " <<<"$1"' _ "$OUT"

finish
