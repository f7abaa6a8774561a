#!/usr/bin/env bash
# test_hold_cli.sh — a session held open by another process's FIFO (its
# host): the open closed the turn a crash left open; `log append` from a
# second cairn process is refused with `locked` (exit 7) while `log cat` and
# `inspect` still read it; once released, appends go on.
source "$(dirname "$0")/lib.sh"

H=${CAIRN_BUILD:-$(dirname "$CAIRN")}/tests/fifohold
[ -x "$H" ] || { echo "Bail out! $H not built"; exit 1; }

cat >"$T/b1" <<'JSON'
{"type":"turn/start","turn":"t1","data":{}}
{"type":"user/message","turn":"t1","data":{"text":"hello"}}
JSON
expect_code 0 "a session with a turn left open" "$CAIRN" log append --new --no-cwd <"$T/b1"
id=${OUT%% *}

mkfifo "$T/in"
"$H" "$CAIRN_HOME" "$id" <"$T/in" >"$T/hold.out" 2>"$T/hold.err" &
holder=$!
exec 3>"$T/in" # the holder's stdin: it holds the session until this closes
for _ in $(seq 1000); do [ -s "$T/hold.out" ] && break; sleep 0.01; done
check "the holder holds it, its open turn closed by one closer (next seq 4)" \
	grep -qx 'HELD 4 1' "$T/hold.out"

expect_code 7 "log append to a held session exits 7 (locked)" \
	timeout 10 "$CAIRN" log append "$id" --expect-seq 4 <<<'{"type":"user/message","data":{"text":"x"}}'
check "... and says another process holds it" grep -qi 'another process' <<<"$ERR"
expect_code 0 "log cat reads a held session" timeout 10 "$CAIRN" log cat "$id"
check "... with the synthetic turn/end" \
	python3 -c 'import json,sys; L=[json.loads(x) for x in sys.stdin.read().splitlines()]; e=L[-1]; sys.exit(0 if e["type"]=="turn/end" and e["data"]["outcome"]=="interrupted" and e["data"]["synthetic"] else 1)' <<<"$OUT"
expect_code 0 "inspect reads a held session" timeout 10 "$CAIRN" inspect --json "$id"

exec 3>&-
wait "$holder"
check "the holder released it and exited 0" test $? -eq 0
expect_code 0 "after the release, log append goes on" \
	timeout 10 "$CAIRN" log append "$id" --expect-seq 4 <<<'{"type":"user/message","data":{"text":"x"}}'
finish
