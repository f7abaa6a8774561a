#!/usr/bin/env bash
# cairn -p with several prompts, -c, and signals, through the real binary:
# prompts after the first are durable queued input, each run only after the
# turn before completed and was saved; a failing turn or a signal stops the
# run, keeps never-started prompts queued (a later run reports them and
# never sends them), and decides the exit code; -c continues the latest
# session of the directory.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/config/cairn" "$T/work" "$T/elsewhere"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
cd "$T/work" || exit 1

events() { "$CAIRN" log cat "$1"; }
last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
pyl() { python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($1) else 1)"; }

# ---- several prompts: queued, then run one after another ----
expect_code 0 "three -p prompts: exit 0" "$CAIRN" -p "first one" -p "second one" -p "third one" --json
check "... the result lists three completed turns, each with its own answer" \
	pyl '(r:=L[-1])["type"]=="result" and [t["outcome"] for t in r["turns"]]==["completed"]*3 and "first one" in r["turns"][0]["text"] and "third one" in r["turns"][2]["text"] and "first one" not in r["turns"][2]["text"]' <<<"$OUT"
S=$(last_session)
check "... the later prompts were queued before the first turn ended" \
	pyl 'len(q:=[i for i,e in enumerate(L) if e["type"]=="input/queued"])==2 and q[1]<[i for i,e in enumerate(L) if e["type"]=="turn/end"][0]' < <(events "$S")
check "... each became a turn whose client_submit_id is its input_id, dequeued just before it" \
	pyl '(pairs:=[(L[i]["data"]["input_id"],L[i+1]) for i,e in enumerate(L) if e["type"]=="input/dequeued"]) is not None and [p[0] for p in pairs]==[e["data"]["input_id"] for e in L if e["type"]=="input/queued"] and all(t["type"]=="turn/start" and t["data"]["client_submit_id"]==i for i,t in pairs)' < <(events "$S")
check "... and ran after the turn before it ended" \
	pyl '[e["type"] for e in L if e["type"] in ("turn/start","turn/end")]==["turn/start","turn/end"]*3' < <(events "$S")

expect_code 0 "text mode: answers one after another on stdout" "$CAIRN" -p "alpha" -p "beta"
check "... both, in order" python3 -c 'import sys; o=sys.argv[1]; sys.exit(0 if 0 <= o.find("alpha") < o.find("beta") else 1)' "$OUT"

# ---- -c: the latest session of this directory ----
expect_code 0 "-c continues the latest session here" "$CAIRN" -c -p "more" --json
check "... in the last session, as its next turn" pyl 'L[-1]["session"]=="'"$(last_session)"'" and L[0]["turn"]=="t3"' <<<"$OUT"
expect_code 3 "-c where no session was: missing (3)" bash -c 'cd "$1" && "$2" -c -p "x"' _ "$T/elsewhere" "$CAIRN"
expect_code 2 "--session with -c: usage" "$CAIRN" -c --session "$S" -p "x"

# ---- a failing turn stops the run; the rest stays queued ----
start_fake '{"replies":[{"status":400,"error":{"type":"invalid_request_error","message":"context too long"}},{"text":"late answer"}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
expect_code 10 "first turn refused by the provider: exit 10" "$CAIRN" -p "too long" -p "never sent"
F=$(last_session)
check "... stderr says the second prompt is still queued" grep -q "1 prompt still queued in session $F" <<<"$ERR"
check "... one request only" test "$(wc -l <"$T/record.jsonl")" -eq 1
check "... the queued prompt is in the log, not dequeued" \
	pyl 'sum(e["type"]=="input/queued" for e in L)==1 and not any(e["type"]=="input/dequeued" for e in L)' < <(events "$F")
expect_code 0 "a later run of the session does not send it" "$CAIRN" --session "$F" -p "fresh"
check "... but says it is there" grep -q "queued by an earlier run, not sent" <<<"$ERR"
check "... only the new prompt was sent" bash -c 'tail -n 1 "$1" | grep -q fresh && ! grep -q "never sent" "$1"' _ "$T/record.jsonl"
stop_fake
unset OPENAI_BASE_URL OPENAI_API_KEY

# ---- signals: cancel, keep the rest queued, drain, exit 11 ----
start_fake '{"replies":[{"text":"slow words arriving one by one","pieces":6,"split":"event","rate":3}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
check "SIGTERM mid-stream: exit 11, the partial answer saved, the next prompt queued" python3 - "$CAIRN" <<'EOF'
import json, os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "-p", "slow please", "-p", "after", "--json"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
first = p.stdout.readline()          # a durable event: the turn is under way
time.sleep(0.8)                      # some text has streamed
p.send_signal(signal.SIGTERM)
out, err = p.communicate(timeout=20)
lines = [json.loads(l) for l in ([first] + out.splitlines()) if l.strip()]
res = lines[-1]
sess = res["session"]
log = [json.loads(l) for l in subprocess.run([sys.argv[1], "log", "cat", sess], capture_output=True,
                                             text=True).stdout.splitlines()]
ended = [e for e in log if e["type"] == "turn/end"]
ok = (p.returncode == 11 and res["exit"] == 11 and res["turns"][0]["outcome"] == "canceled"
      and len(ended) == 1 and ended[0]["data"]["outcome"] == "canceled"
      and any(e["type"] == "assistant/text" for e in log)
      and sum(e["type"] == "input/queued" for e in log) == 1
      and not any(e["type"] == "input/dequeued" for e in log))
if not ok:
    print("# rc", p.returncode, "stderr", err, "log", [e["type"] for e in log], file=sys.stderr)
sys.exit(0 if ok else 1)
EOF
stop_fake

start_fake '{"replies":[{"text":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n","repeat_text":200000,"split":4096}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1"
check "a second SIGINT while the drain waits: exit 130 at once" python3 - "$CAIRN" <<'EOF'
import signal, subprocess, sys, time
# stdout is a pipe nobody reads: the reply and then the drain wait for it
p = subprocess.Popen([sys.argv[1], "-p", "flood"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
p.stdout.read(1)                     # the answer streams ...
time.sleep(2.0)                      # ... and fills the pipe: cairn waits for its reader
p.send_signal(signal.SIGINT)
time.sleep(0.5)
alive = p.poll() is None             # draining: the answer waits to be printed
p.send_signal(signal.SIGINT)
try:
    rc = p.wait(timeout=5)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
if not (alive and rc == 130):
    print(f"# alive after the first SIGINT: {alive}, exit {rc}", file=sys.stderr)
sys.exit(0 if alive and rc == 130 else 1)
EOF
stop_fake

finish
