#!/usr/bin/env bash
# test_config_cli.sh — `cairn config`: the provider selected and why, the
# file's values, a malformed file (exit 2 naming the file, line and
# column), an unknown --provider, and no secret ever printed: keys show as
# set/unset, URL credentials as ***, in text and --json.
. "$(dirname "$0")/lib.sh"
export XDG_CONFIG_HOME="$T/cfg"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$XDG_CONFIG_HOME/cairn"
CFG="$XDG_CONFIG_HOME/cairn/config.json"
SECRET=sk-ant-SECRET-0123456789
PASS=hunter2-PASS

expect_code 0 "no configuration: runs" "$CAIRN" config
check "nothing configured: offline" grep -q '^provider: offline (from default)$' <<<"$OUT"
check "the file is named, not found" grep -q "config file: $CFG (not found)" <<<"$OUT"

expect_code 0 "--json" "$CAIRN" config --json
check "--json provider offline" test "$(json provider)" = offline
check "--json pace 20" test "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["providers"]["offline"]["pace_ms"])' "$OUT")" = 20

export ANTHROPIC_API_KEY=$SECRET
expect_code 0 "an Anthropic key selects anthropic" "$CAIRN" config
check "anthropic from ANTHROPIC_API_KEY" grep -q '^provider: anthropic (from ANTHROPIC_API_KEY)$' <<<"$OUT"
check "the key shows as set" grep -q 'api_key: ANTHROPIC_API_KEY set' <<<"$OUT"
check "the key is not printed" bash -c '! grep -q -- "$1" <<<"$2"' _ "$SECRET" "$OUT"
expect_code 0 "--json with a key" "$CAIRN" config --json
check "--json: the key is not printed" bash -c '! grep -q -- "$1" <<<"$2"' _ "$SECRET" "$OUT"
check "--json: api_key set" test "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["providers"]["anthropic"]["api_key"])' "$OUT")" = set

export OPENAI_BASE_URL="http://user:$PASS@127.0.0.1:8080/v1" OPENAI_API_KEY=
expect_code 0 "a base URL alone selects openai" "$CAIRN" config --json
check "openai from OPENAI_BASE_URL" test "$(json provider_from)" = OPENAI_BASE_URL
check "URL credentials hidden" bash -c '! grep -q -- "$1" <<<"$2"' _ "$PASS" "$OUT"
check "URL shown with ***" grep -q 'http://\*\*\*@127.0.0.1:8080/v1' <<<"$OUT"
check "an empty key is unset" test "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["providers"]["openai"]["api_key"])' "$OUT")" = unset
export OPENAI_BASE_URL=

cat >"$CFG" <<'JSON'
{
  "provider": "openai",
  "providers": {
    "openai": {"base_url": "http://127.0.0.1:11434/v1", "model": "llama3"},
    "offline": {"pace_ms": 0}
  },
  "timeouts": {"first_byte": 600}
}
JSON
expect_code 0 "the file's default provider" "$CAIRN" config
check "openai from config" grep -q '^provider: openai (from config)$' <<<"$OUT"
check "model from config" grep -q '^model: llama3 (from config)$' <<<"$OUT"
check "first byte timeout from config" grep -q 'first byte 600 s' <<<"$OUT"
expect_code 0 "--provider and --model win" "$CAIRN" config --provider anthropic --model claude-opus-4-1
check "anthropic from --provider" grep -q '^provider: anthropic (from --provider)$' <<<"$OUT"
check "model from --model" grep -q '^model: claude-opus-4-1 (from --model)$' <<<"$OUT"
expect_code 2 "an unknown provider" "$CAIRN" config --provider gemini
check "names it" grep -q "unknown provider 'gemini'" <<<"$ERR"

printf '{\n  "provider": "openai",\n  "providers": {\n' >"$CFG"
expect_code 2 "a malformed file: usage error" "$CAIRN" config
check "names the file and position" grep -q "config '$CFG':3:17: invalid JSON" <<<"$ERR"
check "no key in the error" bash -c '! grep -q -- "$1" <<<"$2"' _ "$SECRET" "$ERR"
printf '{"providers": {"openai": {"api_key": "%s"}}}' "$SECRET" >"$CFG"
expect_code 2 "a key written into the file is refused" "$CAIRN" config
check "its name is given, never its value" bash -c 'grep -q "providers.openai.api_key" <<<"$2" && ! grep -q -- "$1" <<<"$2"' _ "$SECRET" "$ERR"
# Raw control bytes inside a string are not JSON (RFC 8259 §7); escaped
# they are.
printf '{"system_prompt": "a\001b"}' >"$CFG"
expect_code 2 "a raw control byte inside a string: invalid JSON (2)" "$CAIRN" config
check "... names the file and position" grep -q "config '$CFG':1:21: invalid JSON" <<<"$ERR"
printf '{"system_prompt": "tab\there"}' >"$CFG"
expect_code 2 "a raw tab inside a string is refused too" "$CAIRN" config
printf '{"system_prompt": "a\\u0001b\\tc"}' >"$CFG"
expect_code 0 "... the same characters escaped are read" "$CAIRN" config
rm -f "$CFG"

# Anything but a regular file at the path is refused at once (2), never
# opened for a blocking read: a FIFO with no writer would wait forever
# (the bound below only stops a run that hangs).
mkdir "$CFG"
expect_code 2 "a directory at the configuration path: usage (2)" "$CAIRN" config
check "... says it is not a regular file" grep -q "config '$CFG' is not a regular file" <<<"$ERR"
rmdir "$CFG"
mkfifo "$CFG"
expect_code 2 "a FIFO at the configuration path: usage (2), without waiting" timeout 20 "$CAIRN" config
check "... says it is not a regular file" grep -q "config '$CFG' is not a regular file" <<<"$ERR"
expect_code 2 "... cairn -p refuses it too" timeout 20 "$CAIRN" -p hello
check "... naming it" grep -q "config '$CFG' is not a regular file" <<<"$ERR"
rm -f "$CFG"
mkfifo "$T/fifo.md"
expect_code 2 "a FIFO as --system: usage (2), without waiting" timeout 20 "$CAIRN" config --system "$T/fifo.md"
check "... says it is not a regular file" grep -q "'$T/fifo.md' is not a regular file" <<<"$ERR"
mkdir -p "$T/fifodir"
mkfifo "$T/fifodir/AGENTS.md"
OUT=$(cd "$T/fifodir" && timeout 20 "$CAIRN" config --json)
check "a FIFO named AGENTS.md is skipped, without waiting" \
	test "$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])["system_prompt"]["files"]))' "$OUT")" = 0

# An empty --provider (or --model, --system) is no choice, not the default.
for o in --provider --model --system; do
	expect_code 2 "config $o '': usage (2)" "$CAIRN" config $o ''
	expect_code 2 "-p with $o '': usage (2)" "$CAIRN" -p hello $o ''
	check "... names $o" grep -q -- "$o needs a value" <<<"$ERR"
done

mkdir -p "$T/repo/.git" "$T/repo/sub"
echo "be terse" >"$T/repo/AGENTS.md"
echo "sub rules" >"$T/repo/sub/AGENTS.md"
echo "global rules" >"$XDG_CONFIG_HOME/cairn/AGENTS.md"
OUT=$(cd "$T/repo/sub" && "$CAIRN" config --json)
check "AGENTS.md files in order" test "$(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["system_prompt"]["files"]))' "$OUT")" = "$XDG_CONFIG_HOME/cairn/AGENTS.md $T/repo/AGENTS.md $T/repo/sub/AGENTS.md"
expect_code 3 "a missing --system file" "$CAIRN" config --system "$T/nope"
finish
