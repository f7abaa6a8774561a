#!/usr/bin/env bash
# The turn tree from the command line: a log with branches and rewinds made
# with `cairn log append`, continued with `cairn -p Q --session ID` against
# the fake model server. The request the model gets holds the active path's
# messages only, and the turn/start cairn writes names its parent (the
# active leaf, or null before the first turn).
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
cd "$T" || exit 1

events() { "$CAIRN" log cat "$1"; }
pyl() { python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($1) else 1)"; }
# The Nth request the fake server answered: the texts of its messages, as
# "role:text" lines (the system prompt left out).
said() { python3 -c 'import json,sys; R=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["reply"] is not None]; [print("%s:%s" % (m["role"], m["content"])) for m in R[int(sys.argv[2])]["body"]["messages"] if m["role"]!="system"]' "$T/record.jsonl" "$1"; }
turn() { # turn ID PARENT-JSON PROMPT ANSWER: one completed turn's events
	printf '{"type":"turn/start","turn":"%s","data":{"parent_turn":%s}}\n' "$1" "$2"
	printf '{"type":"user/message","turn":"%s","data":{"text":"%s"}}\n' "$1" "$3"
	printf '{"type":"assistant/text","turn":"%s","data":{"text":"%s"}}\n' "$1" "$4"
	printf '{"type":"turn/end","turn":"%s","data":{"outcome":"completed"}}\n' "$1"
}

start_fake '{"replies":[{"text":"A4"},{"text":"A5"},{"text":"A6"}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test

# t1 ← t2; rewound to t1; t1 ← t3; then t2 checked out again.
{
	printf '{"type":"session/settings","data":{"provider":"openai","model":"m-1"}}\n'
	turn t1 null one A1
	turn t2 '"t1"' two A2
	printf '{"type":"branch/rewind","data":{"to_turn":"t1","from_leaf":"t2","source_next_seq":10}}\n'
	turn t3 '"t1"' three A3
	printf '{"type":"branch/rewind","data":{"to_turn":"t2","from_leaf":"t3","source_next_seq":15}}\n'
} >"$T/batch.jsonl"
expect_code 0 "a log with a branch, a rewind and a checkout" "$CAIRN" log append --new --no-cwd <"$T/batch.jsonl"
S=$(cut -d" " -f1 <<<"$OUT")
expect_code 0 "continued with -p --session" "$CAIRN" -p "four" --session "$S" --provider openai --model m-1
check "... the model is sent the checked-out path only: t1, t2, the prompt" \
	test "$(said 0)" = "$(printf 'user:one\nassistant:A1\nuser:two\nassistant:A2\nuser:four')"
check "... the new turn is t4, named after every turn of every branch, continuing t2" \
	pyl '[(e["turn"], e["data"].get("parent_turn", "absent")) for e in L if e["type"]=="turn/start"][-1]==("t4","t2")' < <(events "$S")

# Rewound before the first turn: the next turn is a root, sent alone.
next=$(events "$S" | python3 -c 'import json,sys; print(max(json.loads(l)["seq"] for l in sys.stdin) + 1)')
expect_code 0 "a rewind before the first turn" "$CAIRN" log append "$S" --expect-seq "$next" \
	<<<"{\"type\":\"branch/rewind\",\"data\":{\"to_turn\":null,\"from_leaf\":\"t4\",\"source_next_seq\":$next}}"
expect_code 0 "continued again" "$CAIRN" -p "five" --session "$S" --provider openai --model m-1
check "... the model is sent the prompt alone" test "$(said 1)" = "user:five"
check "... its turn/start (t5) says parent_turn null, never leaving it absent" \
	pyl '[(e["turn"], "parent_turn" in e["data"], e["data"].get("parent_turn")) for e in L if e["type"]=="turn/start"][-1]==("t5",True,None)' < <(events "$S")
expect_code 0 "inspect --json of the branched session" "$CAIRN" inspect --json "$S"
check "... counts the turns of every branch, none open" \
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); sys.exit(0 if o["status"]=="ok" and o["turns"]==5 and o["open_turn"] is None else 1)' "$OUT"

# A log written elsewhere numbers its turns its own way: the new turn's id
# is still one no turn of the log has.
{
	printf '{"type":"session/settings","data":{"provider":"openai","model":"m-1"}}\n'
	turn t1 null one A1
	turn t3 '"t1"' three A3
} >"$T/batch.jsonl"
expect_code 0 "a log whose turns are t1 and t3" "$CAIRN" log append --new --no-cwd <"$T/batch.jsonl"
S=$(cut -d" " -f1 <<<"$OUT")
expect_code 0 "continued" "$CAIRN" -p "next" --session "$S" --provider openai --model m-1
check "... the new turn is t4, not a second t3" \
	pyl '[e["turn"] for e in L if e["type"]=="turn/start"]==["t1","t3","t4"]' < <(events "$S")
check "... continuing t3" test "$(said 2)" = "$(printf 'user:one\nassistant:A1\nuser:three\nassistant:A3\nuser:next')"
stop_fake

finish
