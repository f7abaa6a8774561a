#!/usr/bin/env bash
# The reply stream's edges through the real binary and the fake model
# server: only http(s) base URLs and no redirect followed; a reply that
# sends its finish_reason and holds the connection ends completed.
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

finish
