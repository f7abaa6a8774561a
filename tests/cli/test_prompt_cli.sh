#!/usr/bin/env bash
# cairn -p: one turn headless, end to end through the real binary — the
# offline provider, the fake model server on 127.0.0.1 for the network
# paths, the saved log read back with `cairn log cat`, and standard output
# as a pipe: streamed into it, a reader that goes away (EPIPE cancels), and
# a reader that does not read (the reply waits, memory stays bounded).
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config.json"
mkdir -p "$T/config/cairn" && cp "$T/config.json" "$T/config/cairn/config.json"
cd "$T" || exit 1

# The events of the only/last session, one JSON object per line.
events() { "$CAIRN" log cat "$1"; }
last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
pyl() { python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($1) else 1)"; }

# ---- offline ----
expect_code 0 "offline turn: exit 0" "$CAIRN" -p "hello there"
check "... the answer on stdout quotes the prompt" grep -q "> hello there" <<<"$OUT"
check "... stderr names the session" grep -q "^cairn: session [0-9A-Z]\{26\}$" <<<"$ERR"
S1=$(last_session)
check "... saved: session/settings, turn/start, user/message, request/prepared, text, step/end, turn/end completed" \
	pyl 'L[1]["type"]=="session/settings" and L[2]["type"]=="turn/start" and L[3]["data"]["text"]=="hello there" and L[4]["type"]=="request/prepared" and L[5]["type"]=="assistant/text" and L[-2]["type"]=="step/end" and L[-1]["type"]=="turn/end" and L[-1]["data"]["outcome"]=="completed"' < <(events "$S1")
check "... a new session records the provider, the model and the system prompt in effect" \
	pyl 'L[1]["data"]["provider"]=="offline" and L[1]["data"]["model"]=="offline" and L[1]["data"]["system_prompt"].startswith("You are cairn") and "'"$T"'" in L[1]["data"]["system_prompt"]' < <(events "$S1")
check "... what was saved is what was printed" bash -c '
	saved=$("$1" log cat "$2" | python3 -c "import json,sys; print(\"\".join(json.loads(l)[\"data\"][\"text\"] for l in sys.stdin if json.loads(l)[\"type\"]==\"assistant/text\"), end=\"\")")
	[ "$saved" = "$3" ]' _ "$CAIRN" "$S1" "$OUT"
check "... the session is idle after the full save" bash -c '"$1" sessions | grep -q " idle "' _ "$CAIRN"

expect_code 0 "options in any order, -p last" "$CAIRN" --json --provider offline -p "any order"
check "... --json: every durable event once, in seq order, then the result" \
	pyl 'all(L[i]["seq"]==L[0]["seq"]+i for i in range(len(L)-1)) and L[0]["type"]=="session/settings" and L[1]["type"]=="turn/start" and L[-1]["type"]=="result" and L[-1]["exit"]==0 and L[-1]["turns"][0]["outcome"]=="completed" and "any order" in L[-1]["turns"][0]["text"] and L[-1]["turns"][0]["usage"]["output"]>0' <<<"$OUT"

expect_code 0 "a pipe on stdin is appended to the prompt" bash -c 'printf "diff body\n" | "$1" -p "review this"' _ "$CAIRN"
check "... as its own paragraph" pyl 'L[3]["data"]["text"]=="review this\n\ndiff body\n"' < <(events "$(last_session)")
expect_code 0 "-p - reads the prompt from stdin" bash -c 'printf "from stdin" | "$1" -p -' _ "$CAIRN"
check "... whole" pyl 'L[3]["data"]["text"]=="from stdin"' < <(events "$(last_session)")
expect_code 0 "/dev/null on stdin is not read" bash -c '"$1" -p "alone" </dev/null' _ "$CAIRN"
check "... the prompt alone" pyl 'L[3]["data"]["text"]=="alone"' < <(events "$(last_session)")

expect_code 0 "--session resumes a session" "$CAIRN" -p "second" --session "$S1" --json
check "... turn t2 after t1, in the same log" pyl 'L[0]["type"]=="turn/start" and L[0]["turn"]=="t2" and L[-1]["session"]=="'"$S1"'"' <<<"$OUT"
check "... the same settings: no session/settings written again" pyl 'sum(1 for e in L if e["type"]=="session/settings")==1' < <(events "$S1")
expect_code 0 "two prompts in one run" "$CAIRN" -p "one" -p "two"
check "... the settings recorded once, by the first turn" \
	pyl 'sum(1 for e in L if e["type"]=="session/settings")==1 and sum(1 for e in L if e["type"]=="turn/end")==2 and L[1]["type"]=="session/settings"' < <(events "$(last_session)")
check "... the log holds both turns, ended" pyl 'sum(1 for e in L if e["type"]=="turn/end")==2' < <(events "$S1")

expect_code 2 "an empty prompt: usage" "$CAIRN" -p "   "
expect_code 2 "a prompt that is not UTF-8: usage" "$CAIRN" -p "$(printf 'bad \xff byte')"
expect_code 2 "an unknown provider: usage" "$CAIRN" -p "x" --provider nosuch
expect_code 2 "-p without its prompt: usage" "$CAIRN" -p
expect_code 3 "--session of no session: missing" "$CAIRN" -p "x" --session 01ZZZZZZZZZZZZZZZZZZZZZZZZ

# ---- a reader that goes away: EPIPE cancels the turn ----
printf '{"providers": {"offline": {"pace_ms": 5}}}\n' >"$T/config/cairn/config.json"
expect_code 0 "stdout closed early (head -c 1)" bash -c '"$1" -p "cut me off" 2>"$2/epipe.err" | head -c 1 >/dev/null; echo "${PIPESTATUS[0]}" >"$2/epipe.rc"' _ "$CAIRN" "$T"
check "... exit 11 (canceled)" test "$(cat "$T/epipe.rc")" = 11
check "... the turn is saved as canceled, the partial answer kept" \
	pyl 'L[-1]["type"]=="turn/end" and L[-1]["data"]["outcome"]=="canceled" and any(e["type"]=="assistant/text" for e in L)' < <(events "$(last_session)")
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"

# ---- the network paths, against the fake model server ----
start_fake '{"replies":[{"text":"Hi from the model \u00e9","pieces":5,"usage":{"input":3,"output":4}}]}'
expect_code 0 "openai over HTTP: exit 0" env OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test "$CAIRN" -p "hi" --model m-1
check "... the streamed text on stdout" test "$OUT" = "Hi from the model é"
check "... the header records provider and model" pyl 'L[0]["data"]["provider"]=="openai" and L[0]["data"]["model"]=="m-1"' < <(events "$(last_session)")
check "... the key never reaches the log" bash -c '! "$1" log cat "$2" | grep -q sk-test' _ "$CAIRN" "$(last_session)"
stop_fake

start_fake '{"replies":[{"status":401,"error":{"type":"invalid_request_error","message":"Incorrect API key provided"}}]}'
expect_code 10 "a provider's refusal: exit 10" env OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test "$CAIRN" -p "hi"
check "... stderr says why" grep -q "Incorrect API key" <<<"$ERR"
check "... turn/end failed, class provider, status 401" \
	pyl 'L[-1]["data"]["outcome"]=="failed" and L[-1]["data"]["error"]["class"]=="provider" and L[-1]["data"]["error"]["http_status"]==401' < <(events "$(last_session)")
stop_fake

start_fake '{"replies":[{"text":"cut short","omit_end":true},{"text":"never"}]}'
expect_code 12 "a reply without its closing event: exit 12 (delivery unknown)" env OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test "$CAIRN" -p "hi"
check "... sent once, never again" test "$(wc -l <"$T/record.jsonl")" -eq 1
check "... the partial answer kept, class delivery_unknown" \
	pyl 'any(e["type"]=="assistant/text" and e["data"]["text"]=="cut short" for e in L) and L[-1]["data"]["error"]["class"]=="delivery_unknown"' < <(events "$(last_session)")
stop_fake

# ---- the settings in effect: recorded when they change; blobs read whole on resume ----
# The Nth request the fake server accepted, as the JSON body it got.
request() { python3 -c 'import json,sys; R=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["reply"] is not None]; print(json.dumps(R[int(sys.argv[2])]["body"]))' "$T/record.jsonl" "$1"; }
reqy() { python3 -c "import json,sys; B=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; }
settings_of() { events "$1" | python3 -c 'import json,sys; print(json.dumps([json.loads(l)["data"] for l in sys.stdin if json.loads(l)["type"]=="session/settings"]))'; }
setty() { python3 -c "import json,sys; S=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; }
start_fake '{"replies":[{"text":"a"},{"text":"b"},{"text":"c"},{"text":"d"},{"text":"e"},{"text":"f"},{"text":"g"},{"text":"h"}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
printf 'You review code.\n' >"$T/sys1.md"
printf 'You write poems.\n' >"$T/sys2.md"
expect_code 0 "a new session over openai with --model and --system" "$CAIRN" -p "one" --model m-1 --system "$T/sys1.md" --json
S2=$(last_session)
check "... session/settings records provider, model and the prompt sent" \
	setty 'len(S)==1 and S[0]=={"provider":"openai","model":"m-1","system_prompt":"You review code.\n"}' < <(settings_of "$S2")
check "... the request carried that prompt" reqy 'B["messages"][0]=={"role":"system","content":"You review code.\n"} and B["model"]=="m-1"' < <(request 0)
check "... --json printed the settings event, never the key" bash -c 'grep -q "\"type\":\"session/settings\"" <<<"$1" && ! grep -q sk-test <<<"$1"' _ "$OUT"
# What a rebuilt prompt would pick up from now on: the session keeps its own.
printf 'Answer in French.\n' >"$T/AGENTS.md"
expect_code 0 "the same session again without options" "$CAIRN" -p "two" --session "$S2"
check "... nothing changed: no session/settings written" setty 'len(S)==1' < <(settings_of "$S2")
check "... the stored prompt was sent, not a rebuilt one (AGENTS.md added since)" \
	reqy 'B["messages"][0]["content"]=="You review code.\n" and B["model"]=="m-1"' < <(request 1)
rm -f "$T/AGENTS.md"
expect_code 0 "the same session with the same --model and --system" "$CAIRN" -p "three" --session "$S2" --model m-1 --system "$T/sys1.md"
check "... a second identical turn writes no settings" setty 'len(S)==1' < <(settings_of "$S2")
expect_code 0 "--model other on resume" "$CAIRN" -p "four" --session "$S2" --model other
check "... writes only the model" setty 'len(S)==2 and S[1]=={"model":"other"}' < <(settings_of "$S2")
check "... the request used it" reqy 'B["model"]=="other" and B["messages"][0]["content"]=="You review code.\n"' < <(request 3)
printf 'Answer in French.\n' >"$T/AGENTS.md"
expect_code 0 "--system another file on resume" "$CAIRN" -p "five" --session "$S2" --system "$T/sys2.md"
check "... writes only the new prompt (with the AGENTS.md it now finds)" \
	setty 'len(S)==3 and list(S[2])==["system_prompt"] and S[2]["system_prompt"].startswith("You write poems.\n") and "Answer in French." in S[2]["system_prompt"]' < <(settings_of "$S2")
check "... the model stays the session's" reqy 'B["model"]=="other" and B["messages"][0]["content"].startswith("You write poems.")' < <(request 4)
rm -f "$T/AGENTS.md"
check "the key is in no log" bash -c '! "$1" log cat "$2" | grep -q sk-test' _ "$CAIRN" "$S2"
expect_code 0 "cairn config with the key set" "$CAIRN" config
check "... never shows it" bash -c '! grep -q sk-test <<<"$1"' _ "$OUT"
expect_code 0 "cairn config --json with the key set" "$CAIRN" config --json
check "... never shows it" bash -c '! grep -q sk-test <<<"$1"' _ "$OUT"

# A prompt over BLOB_INLINE_MAX (256 KiB) goes to a blob: a resumed session
# must still send it whole, and a system prompt that large is kept whole.
python3 -c 'import sys; sys.stdout.write("".join("line %06d of a long paste\n" % i for i in range(12000)))' >"$T/big.txt"
python3 -c 'import sys; sys.stdout.write("".join("rule %06d: be careful\n" % i for i in range(10500)))' >"$T/bigsys.md"
python3 -c 'import sys; sys.stdout.write("".join("agent note %06d\n" % i for i in range(3000)))' >"$T/AGENTS.md"
expect_code 0 "a 300 KiB prompt with a 300 KiB system prompt" bash -c '"$1" -p - --system "$2/bigsys.md" <"$2/big.txt"' _ "$CAIRN" "$T"
S3=$(last_session)
check "... both went to blobs" bash -c '"$1" log cat "$2" | python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin]; sys.exit(0 if all(\"blob\" in e[\"data\"] for e in L if e[\"type\"] in (\"user/message\",\"session/settings\")) else 1)"' _ "$CAIRN" "$S3"
rm -f "$T/AGENTS.md"
expect_code 0 "resumed" "$CAIRN" -p "and now?" --session "$S3"
request 6 >"$T/req.json"
settings_of "$S3" >"$T/settings.json"
check "... the earlier prompt is sent whole, read from its blob" \
	python3 -c 'import json,sys; B=json.load(open(sys.argv[1])); want=open(sys.argv[2]).read(); u=[m for m in B["messages"] if m["role"]=="user"]; sys.exit(0 if u[0]["content"]==want and u[-1]["content"]=="and now?" else 1)' "$T/req.json" "$T/big.txt"
check "... the stored system prompt too, unchanged: no settings written" \
	python3 -c 'import json,sys; B=json.load(open(sys.argv[1])); s=B["messages"][0]["content"]; sys.exit(0 if s.startswith(open(sys.argv[2]).read()) and s.endswith("agent note 002999\n") and len(json.load(open(sys.argv[3])))==1 else 1)' "$T/req.json" "$T/bigsys.md" "$T/settings.json"
unset OPENAI_BASE_URL OPENAI_API_KEY
stop_fake

# ---- a reader that does not read: the reply waits, memory stays bounded ----
start_fake '{"replies":[{"text":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n","repeat_text":400000,"split":2048}]}'
check "stdout not read for 2 s while 25 MB stream: the reply waits, RSS stays bounded, all arrives" \
	env OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test python3 - "$CAIRN" <<'EOF'
import os, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "-p", "flood"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
time.sleep(2.0)
def rss_kb(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmHWM:"):
            return int(l.split()[1])
    return 0
peak = rss_kb(p.pid)
n = 0
while True:
    b = p.stdout.read(1 << 16)
    if not b:
        break
    n += len(b)
rc = p.wait()
want = 64 * 400000
print(f"# peak RSS while not read: {peak} kB; bytes read {n}, exit {rc}", file=sys.stderr)
sys.exit(0 if rc == 0 and n == want and peak < 48 * 1024 else 1)
EOF
stop_fake

finish
