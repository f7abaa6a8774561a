#!/usr/bin/env bash
# The reply stream's edges through the real binary and the fake model
# server: only http(s) base URLs and no redirect followed; the timeouts
# wait for content (comments, a trickle hold nothing open; keep-alives
# while a model thinks are tolerated up to first_byte), the deadline
# (timeouts.total, shown by cairn config); a reply that sends its
# finish_reason and holds the connection ends completed.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/config/cairn"
printf '{}\n' >"$T/config/cairn/config.json"
cd "$T" || exit 1

events() { "$CAIRN" log cat "$1"; }
last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
pyl() { python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($1) else 1)"; }
sessions() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# ---- only http:// and https:// ----
# A file that reads as a whole reply where a file:// base URL would look.
mkdir -p "$T/files/v1/chat"
printf 'data: {"choices":[{"index":0,"delta":{"content":"read from a file"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n' \
	>"$T/files/v1/chat/completions"
expect_code 2 "OPENAI_BASE_URL=file://...: usage, exit 2" \
	env OPENAI_BASE_URL="file://$T/files/v1" OPENAI_API_KEY=sk-test "$CAIRN" -p "hi"
check "... naming the variable and the URL" grep -q "OPENAI_BASE_URL 'file://$T/files/v1' is not an http:// or https:// URL" <<<"$ERR"
check "... the file is never read as a reply" test -z "$OUT"
check "... no session was made" test "$(sessions)" = 0

# An ftp:// endpoint: a listener that would take the connection.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
s.settimeout(8)
try:
    c, _ = s.accept(); open(sys.argv[2], "w").write("connected")
except OSError:
    pass
' "$T/ftp.port" "$T/ftp.seen" &
FTP_PID=$!
for _ in $(seq 100); do [ -s "$T/ftp.port" ] && break; sleep 0.05; done
printf '{"providers": {"anthropic": {"base_url": "ftp://127.0.0.1:%s"}}}\n' "$(cat "$T/ftp.port")" >"$T/config/cairn/config.json"
expect_code 2 "a provider's base_url ftp://... in the file: usage, exit 2" \
	env ANTHROPIC_API_KEY=ant-test "$CAIRN" -p "hi" --provider anthropic
check "... naming the key and the URL" grep -q "'providers.anthropic.base_url' must be an http:// or https:// URL, not 'ftp://127.0.0.1:" <<<"$ERR"
expect_code 2 "... cairn config refuses it too" "$CAIRN" config
kill "$FTP_PID" 2>/dev/null
wait "$FTP_PID" 2>/dev/null
check "... nothing connected to the ftp port" test ! -e "$T/ftp.seen"
printf '{}\n' >"$T/config/cairn/config.json"

# A redirect is the reply, never followed, whatever it points to.
for target in "file:///etc/passwd" "ftp://127.0.0.1:21/x"; do
	start_fake '{"replies":[{"status":302,"headers":{"Location":"'"$target"'"},"body":""},{"text":"never"}]}'
	expect_code 10 "a redirect to $target: a provider error, exit 10" \
		env OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test "$CAIRN" -p "hi"
	check "... saying where it points" grep -q "redirects (HTTP 302) to '$target'" <<<"$ERR"
	check "... sent once, class provider, nothing of the target on stdout" \
		bash -c '[ "$(wc -l <"$1")" -eq 1 ] && [ -z "$2" ]' _ "$T/record.jsonl" "$OUT"
	check "... turn/end failed, class provider, status 302" \
		pyl 'L[-1]["data"]["error"]["class"]=="provider" and L[-1]["data"]["error"]["http_status"]==302' < <(events "$(last_session)")
	stop_fake
done

# ---- what counts as progress: content, never comments or a trickle ----
# Seconds since $1 (date +%s.%N), as a decimal.
since() { python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$1"; }
faster() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$1" "$2"; }
timeouts() { printf '{"timeouts": %s}\n' "$1" >"$T/config/cairn/config.json"; }
oa() { env OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test "$CAIRN" "$@"; }

expect_code 0 "cairn config shows the deadline: 3600 s by default" "$CAIRN" config
check "... with first byte 600 s, gap 120 s" grep -q "first byte 600 s, gap 120 s, total 3600 s" <<<"$OUT"
timeouts '{"first_byte": 8, "gap": 0.3, "total": 90}'
expect_code 0 "... and the file's timeouts.total" "$CAIRN" config --json
check "... as total_ms, every provider" \
	python3 -c 'import json,sys; P=json.loads(sys.argv[1])["providers"]; sys.exit(0 if P["openai"]["timeouts"]["total_ms"]==90000==P["anthropic"]["timeouts"]["total_ms"] else 1)' "$OUT"

# A model thinking: keep-alive comments for 1 s, longer than the gap
# (0.3 s) but within the first-byte timeout (8 s), then the answer.
start_fake '{"replies":[{"text":"thought it through","split":"event","keepalive_ms":100,"keepalive_for_ms":1000}]}'
expect_code 0 "keep-alive comments while the model thinks: tolerated up to first_byte" oa -p "hi"
check "... the answer whole" test "$OUT" = "thought it through"
stop_fake

# Comments that never end, or a byte a second: held open by nothing.
timeouts '{"first_byte": 1, "gap": 10}'
start_fake '{"replies":[{"text":"never","split":"event","keepalive_ms":100,"keepalive_for_ms":25000}]}'
t0=$(date +%s.%N)
expect_code 12 "comments without content past first_byte (1 s): exit 12 (delivery unknown)" oa -p "hi"
el=$(since "$t0")
check "... after the first-byte timeout, not the comments' 25 s ($el s)" faster "$el" 8
check "... saying which timeout" grep -q "no content in the reply within 1 s (timeouts.first_byte)" <<<"$ERR"
check "... sent once, turn/end class delivery_unknown" \
	bash -c '[ "$(wc -l <"$1")" -eq 1 ] && "$2" log cat "$3" | tail -n 1 | grep -q "\"class\":\"delivery_unknown\""' _ "$T/record.jsonl" "$CAIRN" "$(last_session)"
stop_fake
start_fake '{"replies":[{"text":"one drop at a time","split":1,"rate":40}]}'
t0=$(date +%s.%N)
expect_code 12 "a trickle of one byte per 25 ms, no whole event in 1 s: exit 12" oa -p "hi"
el=$(since "$t0")
check "... at the first-byte timeout ($el s)" faster "$el" 8
check "... saying so" grep -q "(timeouts.first_byte)" <<<"$ERR"
stop_fake

# After content, comments do not reset the gap.
timeouts '{"first_byte": 10, "gap": 1}'
start_fake '{"replies":[{"deltas":["half ","never"],"split":"event","keepalive_ms":100,"keepalive_for_ms":25000,"keepalive_after":2}]}'
t0=$(date +%s.%N)
expect_code 12 "comments after content, longer than the gap (1 s): exit 12" oa -p "hi"
el=$(since "$t0")
check "... at the gap timeout ($el s)" faster "$el" 8
check "... saying so" grep -q "no more content in the reply for 1 s (timeouts.gap)" <<<"$ERR"
check "... the partial answer kept" \
	pyl 'any(e["type"]=="assistant/text" and e["data"]["text"]=="half " for e in L) and L[-1]["data"]["error"]["class"]=="delivery_unknown"' < <(events "$(last_session)")
stop_fake

# The deadline: content every 100 ms, for 6 s in all; the total is 1.5 s.
timeouts '{"first_byte": 10, "gap": 10, "total": 1.5}'
start_fake '{"replies":[{"text":"a b c d e f g h i j k l m n o p q r s t u v w x y z 1 2 3 4 5 6 7 8 9","pieces":60,"split":"event","rate":10}]}'
t0=$(date +%s.%N)
expect_code 12 "a reply still streaming at the deadline (timeouts.total 1.5 s): exit 12" oa -p "hi"
el=$(since "$t0")
check "... at the deadline ($el s)" faster "$el" 5
check "... saying so" grep -q "the reply did not end within 1.5 s (timeouts.total)" <<<"$ERR"
check "... what came is kept: a part of the answer" \
	pyl '0 < len("".join(e["data"]["text"] for e in L if e["type"]=="assistant/text")) < 70 and "a b c d e f g h i j k l m n o p q r s t u v w x y z".startswith("".join(e["data"]["text"] for e in L if e["type"]=="assistant/text")[:20])' < <(events "$(last_session)")
stop_fake

# ---- a finish_reason closes an OpenAI reply ----
timeouts '{"gap": 10}'
start_fake '{"replies":[{"text":"complete answer","no_done":true,"hold_ms":30000,"usage":{"input":4,"output":2}}]}'
t0=$(date +%s.%N)
expect_code 0 "finish_reason stop, then no [DONE] and the connection held: exit 0" oa -p "hi" --json
el=$(since "$t0")
check "... after a short grace, not the gap (10 s) ($el s)" faster "$el" 8
check "... turn completed with the whole answer and the usage chunk" \
	pyl 'L[-1]["exit"]==0 and L[-1]["turns"][0]["outcome"]=="completed" and L[-1]["turns"][0]["text"]=="complete answer" and L[-1]["turns"][0]["usage"]["output"]==2' <<<"$OUT"
check "... the log: step/end finish_reason stop, turn/end completed" \
	pyl 'any(e["type"]=="step/end" and e["data"].get("finish_reason")=="stop" for e in L) and L[-1]["data"]["outcome"]=="completed"' < <(events "$(last_session)")
stop_fake

finish
