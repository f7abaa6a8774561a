#!/usr/bin/env bash
# Tool-call arguments the log cannot keep as JSON, over the wire of both
# protocols (the fake model server): a duplicate key (at the top and
# nested), a number beyond a double's range, an escaped NUL, nesting
# deeper than an event may hold. cairn -p
# exits 0: each call is logged with its text as sent (args_raw) and an
# error result the model reads, never run (the NUL would have cut the
# command short); the next request carries a history the server accepts,
# within the turn and after a resume; log cat and inspect read the log.
# Model text with an escaped NUL or a lone surrogate is saved valid.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/config/cairn" "$T/work"
printf '{}\n' >"$T/config/cairn/config.json"
cd "$T/work" || exit 1

last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }

# The arguments as the model sends them (JSON texts, not objects).
python3 - >"$T/script.json" <<'PY'
import json
calls = [
    {"id": "c_dup", "name": "shell", "arguments": '{"command":"touch dup-a","command":"touch dup-b"}'},
    {"id": "c_nest", "name": "shell", "arguments": '{"command":"touch nest","env":{"k":"1","k":"2"}}'},
    {"id": "c_big", "name": "shell", "arguments": '{"command":"touch big","timeout_ms":1e400}'},
    {"id": "c_nul", "name": "shell", "arguments": '{"command":"touch nul-mark\\u0000x"}'},
    {"id": "c_deep", "name": "shell", "arguments": '{"command":"touch deep","x":' + "[" * 998 + "]" * 998 + "}"},
]
print(json.dumps({"replies": [{"tool_calls": calls}, {"text": "understood"}, {"text": "resumed"}]}))
PY
SCRIPT=$(cat "$T/script.json")

for proto in openai anthropic; do
	rm -f dup-a dup-b nest big nul-mark deep
	start_fake "$SCRIPT"
	if [ "$proto" = openai ]; then
		export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
	else
		unset OPENAI_BASE_URL OPENAI_API_KEY
		export ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=ant-test
	fi
	expect_code 0 "$proto: calls with unkeepable arguments: the turn completes" \
		"$CAIRN" -p "do it" --provider "$proto" --approve all
	check "... $proto: the answer" test "$OUT" = "understood"
	check "... $proto: no command ran (the NUL did not shorten one)" \
		bash -c '! ls dup-a dup-b nest big nul-mark deep 2>/dev/null | grep -q .'
	S=$(last_session)
	"$CAIRN" log cat "$S" >"$T/$proto.log"
	check "... $proto: each call keeps its text as sent in args_raw, args {}" python3 - "$T/$proto.log" "$T/script.json" <<'PY'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
sent = [c["arguments"] for c in json.load(open(sys.argv[2]))["replies"][0]["tool_calls"]]
calls = [e["data"] for e in L if e["type"] == "tool/call"]
sys.exit(0 if [c.get("args_raw") for c in calls] == sent and all(c["args"] == {} for c in calls) else 1)
PY
	check "... $proto: each answered by an error result naming why, never started" python3 - "$T/$proto.log" <<'PY'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
res = [e["data"] for e in L if e["type"] == "tool/result"]
why = ["duplicate object key", "duplicate object key", "number out of range", "escaped NUL",
       "nested deeper"]
ok = len(res) == 5 and all(r["status"] == "error" and w in r["output"] and "did not run" in r["output"]
                           for r, w in zip(res, why))
ok = ok and not any(e["type"] in ("tool/started", "interaction/request") for e in L)
ok = ok and L[-1]["type"] == "turn/end" and L[-1]["data"]["outcome"] == "completed"
sys.exit(0 if ok else 1)
PY
	expect_code 0 "... $proto: the session resumes" "$CAIRN" -p "and now?" --session "$S" --provider "$proto"
	check "... $proto: the answer after the resume" test "$OUT" = "resumed"
	stop_fake
	check "... $proto: the server accepted every request, sent the calls back with {} and the errors" \
		python3 - "$T/record.jsonl" "$proto" <<'PY'
import json, sys
R = [json.loads(l) for l in open(sys.argv[1])]
proto = sys.argv[2]
ok = len(R) == 3 and all(r.get("reply") is not None for r in R)
for r in R[1:]:
    msgs = r["body"]["messages"]
    if proto == "openai":
        args = [t["function"]["arguments"] for m in msgs for t in m.get("tool_calls") or []]
        errs = [m["content"] for m in msgs if m["role"] == "tool"]
    else:
        blocks = [b for m in msgs if isinstance(m["content"], list) for b in m["content"]]
        args = [b["input"] for b in blocks if b["type"] == "tool_use"]
        errs = [b["content"] for b in blocks if b["type"] == "tool_result" and b.get("is_error")]
    ok = ok and args == (["{}"] * 5 if proto == "openai" else [{}] * 5)
    ok = ok and len(errs) == 5 and all("You sent:" in e for e in errs)
sys.exit(0 if ok else 1)
PY
	expect_code 0 "... $proto: inspect reads the log" "$CAIRN" inspect "$S"
	check "... $proto: log cat shows the raw arguments" grep -q 'args_raw' "$T/$proto.log"
done
unset ANTHROPIC_BASE_URL ANTHROPIC_API_KEY

# An escaped NUL alone in a step, beside a call that is fine: the NUL's
# call never runs shortened, the other runs.
rm -f nul-mark ok-mark
start_fake '{"replies": [{"tool_calls": [{"id": "c_nul", "name": "shell", "arguments": "{\"command\":\"touch nul-mark\\u0000 ok-mark\"}"}, {"id": "c_ok", "name": "shell", "arguments": "{\"command\":\"touch ok-mark\"}"}]}, {"raw_deltas": ["fine\\u0000", " \\ud800 end"]}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
expect_code 0 "an escaped NUL in a command: the turn completes" "$CAIRN" -p "nul" --approve all
stop_fake
check "... the command was not run cut at the NUL" test ! -e nul-mark
check "... the call beside it ran" test -e ok-mark
check "... its result says why" python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin]
r = [e["data"] for e in L if e["type"] == "tool/result"]
sys.exit(0 if [x["status"] for x in r] == ["error", "ok"] and "escaped NUL" in r[0]["output"] else 1)' < <("$CAIRN" log cat "$(last_session)")
# Model text is kept valid as well: an escaped NUL and a lone surrogate in
# the answer's deltas are saved as U+FFFD.
check "... the answer's NUL and lone surrogate saved as U+FFFD" python3 -c '
import json, sys
L = [json.loads(l) for l in sys.stdin]
t = "".join(e["data"]["text"] for e in L if e["type"] == "assistant/text")
sys.exit(0 if t == "fine\ufffd \ufffd end" and L[-1]["data"]["outcome"] == "completed" else 1)' < <("$CAIRN" log cat "$(last_session)")
unset OPENAI_BASE_URL OPENAI_API_KEY
finish
