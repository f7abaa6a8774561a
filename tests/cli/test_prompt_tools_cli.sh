#!/usr/bin/env bash
# cairn -p with tools, through the real binary and the offline provider
# (which proposes one call for "run CMD", "read PATH", "list [PATH]"): the
# approval policy of the run (--approve), nobody to ask in headless mode
# (ask denies, saying so), the result fed back, and exit 14 at the step
# limit. Then, with the fake model server: a call whose arguments are over
# the line limit (a 300 KB write_file) goes to a blob and still reaches the
# model whole, within the turn and after a resume.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export XDG_CONFIG_HOME="$T/config"
unset OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
mkdir -p "$T/config/cairn" "$T/work"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
cd "$T/work" || exit 1
printf 'first line of notes\nsecond\n' >notes.txt

events() { "$CAIRN" log cat "$1"; }
last_session() { "$CAIRN" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }
pyl() { python3 -c "import json,sys; L=[json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($1) else 1)"; }

expect_code 0 "--approve all: the command runs and the model gets its output" "$CAIRN" -p "run echo from-the-shell" --approve all
check "... the answer quotes the result's first line" test "$OUT" = "done: from-the-shell"
S=$(last_session)
check "... the call, its answer by policy, tool/started and the result, in order" \
	pyl '[e["type"] for e in L if e["type"].startswith(("tool/","interaction/"))]==["tool/call","interaction/request","interaction/answer","tool/started","tool/result"] and [e for e in L if e["type"]=="interaction/answer"][0]["data"]["by"]=="policy"' < <(events "$S")

expect_code 0 "--approve read-only: reading inside the cwd runs" "$CAIRN" -p "read notes.txt" --approve read-only
check "... the model got the file" grep -q "first line of notes" <<<"$OUT"

expect_code 0 "default ask: nobody to ask, the call is denied" "$CAIRN" -p "run touch should-not-exist"
check "... stderr says so" grep -q "denied shell: touch should-not-exist" <<<"$ERR"
check "... nothing ran" test ! -e should-not-exist
check "... the model read why" grep -q "^done: denied: " <<<"$OUT"
check "... --approve is not saved into the session" \
	pyl 'not any(e["type"]=="session/settings" and "approval" in e["data"] for e in L)' < <(events "$(last_session)")

# The advice names a policy that would allow the call: a shell command
# only under all; reading inside the cwd under read-only too; under
# read-only, what it refused only under all.
check "... the advice for a command is --approve all alone" \
	grep -q "denied shell: touch should-not-exist (nobody to ask: use --approve all)" <<<"$ERR"
expect_code 0 "default ask: a read inside the cwd is denied" "$CAIRN" -p "read notes.txt"
check "... the advice names read-only or all" \
	grep -q "denied read_file: notes.txt (nobody to ask: use --approve read-only or all)" <<<"$ERR"
expect_code 0 "--approve read-only: a command is denied" "$CAIRN" -p "run touch should-not-exist" --approve read-only
check "... the advice is --approve all, not the policy in force" \
	grep -q "denied shell: touch should-not-exist (nobody to ask: use --approve all)" <<<"$ERR"
check "... nothing ran" test ! -e should-not-exist
expect_code 0 "--approve read-only: a read outside the cwd is denied" "$CAIRN" -p "read /etc/hostname" --approve read-only
check "... the advice is --approve all" \
	grep -q "denied read_file: /etc/hostname (nobody to ask: use --approve all)" <<<"$ERR"

expect_code 2 "--approve with an unknown policy: usage" "$CAIRN" -p "x" --approve sometimes

printf '{"max_steps": 1, "providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
expect_code 14 "the step limit reached: exit 14" "$CAIRN" -p "run echo once" --approve all --json
check "... the call was not executed, the turn failed with class step_limit" \
	pyl 'any(e["type"]=="tool/result" and e["data"]["status"]=="not_executed" for e in L) and L[-1]["turns"][0]["error"]["class"]=="step_limit"' <<<"$OUT"
check "... cairn config shows the limit" bash -c '"$1" config | grep -q "^max_steps: 1$"' _ "$CAIRN"

printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
python3 - >"$T/big.json" <<'PY'
import json
args = json.dumps({"path": "big.txt", "content": "y" * 300000 + "\nend\n"})
print(json.dumps({"replies": [{"tool_calls": [{"id": "c_big", "name": "write_file", "arguments": args}]},
                              {"text": "written"}, {"text": "still here"}]}))
PY
start_fake "$(cat "$T/big.json")"
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
expect_code 0 "a 300 KB write_file call runs" "$CAIRN" -p "write the big file" --approve all
check "... the file is whole" test "$(wc -c <big.txt)" = 300005
S=$(last_session)
check "... the log keeps the call's head and tail, its arguments whole in a blob" \
	pyl '[(isinstance(e["data"]["args"], str) and len(e["data"]["args"]) < 40000 and e["data"]["blob"]["size"] > 300000) for e in L if e["type"]=="tool/call"]==[True]' < <(events "$S")
expect_code 0 "... the session resumes" "$CAIRN" -p "and now?" --session "$S"
stop_fake
args_sizes='[[len(t["function"]["arguments"]) for m in json.loads(l)["body"]["messages"] for t in m.get("tool_calls") or []] for l in open(sys.argv[1])]'
check "... the model got the arguments whole in the turn's next request and after the resume" \
	python3 -c "import json,sys; a=$args_sizes; sys.exit(0 if a[1:]==[[a[1][0]]]*2 and a[1][0]>300000 and a[0]==[] else 1)" "$T/record.jsonl"

# The tools' configuration: what the model reads of a result, what the log
# keeps, and which variables the tools never see.
printf '{"tools": {"result_max": 2048, "output_max": 8192, "env_strip": ["SECRET_*"]}}\n' >"$T/config/cairn/config.json"
start_fake '{"replies": [{"tool_calls": [{"id": "c_env", "name": "shell", "arguments": "{\"command\": \"env | grep -e KEEP_ME -e SECRET_ -e _API_KEY; seq 1 20000\"}"}]}, {"text": "seen"}]}'
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-test
SECRET_TOKEN=hidden KEEP_ME=yes expect_code 0 "tools.* configured: the call runs" "$CAIRN" -p "show the environment" --approve all
stop_fake
tool_msg='[m["content"] for m in json.loads(open(sys.argv[1]).readlines()[1])["body"]["messages"] if m["role"]=="tool"][0]'
check "... the model read at most result_max bytes, head and tail" \
	python3 -c "import json,sys; t=$tool_msg; sys.exit(0 if len(t.encode()) <= 2048+200 and '20000' in t and 'cut' in t else 1)" "$T/record.jsonl"
check "... the tools saw neither the pattern's variables nor the provider's key" \
	python3 -c "import json,sys; t=$tool_msg; sys.exit(0 if 'KEEP_ME=yes' in t and 'SECRET_TOKEN' not in t and 'OPENAI_API_KEY' not in t else 1)" "$T/record.jsonl"
check "... the log kept output_max bytes of it" \
	pyl '[8192 - 200 <= len(e["data"]["output"].encode()) <= 8192 + 200 for e in L if e["type"]=="tool/result"]==[True]' < <(events "$(last_session)")
unset OPENAI_BASE_URL OPENAI_API_KEY
finish
