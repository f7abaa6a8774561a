#!/usr/bin/env bash
# Escape sequences in what a model or a tool writes reach the chat screen
# inert: the terminal's title stays, nothing is cleared, and the bytes
# show as text (^[ for ESC). The model is the fake model server speaking
# the OpenAI protocol; the tool runs under --approve all.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
start_fake '{"replies": [{"text": "before \u001b]0;PWNED\u0007 \u001b[2J \u009b31mafter\n\nsecond line \u202eevil"},
                          {"tool_calls": [{"id": "c1", "name": "shell", "arguments": "{\"command\": \"printf \\\"x\\\\033]0;PWNED2\\\\007y\\\\n\\\"\"}"}]},
                          {"text": "tool done"}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
start h --approve all
TITLE=$(TM display -p -t h '#{pane_title}')
keys h "say something hostile" Enter
check "the hostile answer is shown to its end" wait_for h "second line"
check "... ESC shows as ^[ and the rest stays visible" wait_for h 'before \^\[\]0;PWNED\^G \^\[\[2J'
check "... the C1 CSI shows inert" wait_for h '\\u009b31mafter'
check "... the bidi override shows inert" wait_for h '\\u202eevil'
check "... the terminal's title did not change" test "$(TM display -p -t h '#{pane_title}')" = "$TITLE"
keys h "run the tool" Enter
check "a tool's output with an OSC sequence: shown inert" wait_for h 'x\^\[\]0;PWNED2\^Gy'
check "... the title did not change" test "$(TM display -p -t h '#{pane_title}')" = "$TITLE"
keys h C-d
check "quit: exit 0" test "$(wait_exit h)" = 0
check "... the last answer printed to the normal screen" wait_for h "^tool done"
stop_fake
finish
