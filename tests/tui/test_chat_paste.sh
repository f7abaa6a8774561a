#!/usr/bin/env bash
# A 1 MB bracketed paste stays responsive (read in large chunks, not a
# byte per read) and is sent whole: the prompt over the inline limit is
# stored in a blob with the pasted bytes; control bytes in it are inert.
# A paste that holds the end marker itself followed by CR (tmux passes it
# through) never sends: the faked marker is kept as text, the CR is a
# newline.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
python3 - "$T/paste.txt" <<'PY'
import random, sys
random.seed(7)
words = ["alpha", "beta", "gamma", "épsilon", "数据", "🙂", "x\u0301", "tab\there"]
text = " ".join(random.choice(words) for _ in range(150000))
open(sys.argv[1], "w", encoding="utf-8").write(text + " THE-END")
PY
start p
wait_for p "^ idle" >/dev/null
TM load-buffer -b big "$T/paste.txt"
T0=$(date +%s%N)
TM paste-buffer -p -r -b big -t p
check "a 1 MB paste arrives in the composer" wait_for p "THE-END" 30
T1=$(date +%s%N)
echo "# shown after $(((T1 - T0) / 1000000)) ms"
keys p Enter
check "... it is sent: the answer comes" wait_for p "cairn config" 30
wait_for p "^ idle" 30 >/dev/null
ID=$("$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
check "... stored whole in a blob, byte for byte" python3 - "$CAIRN" "$DATA" "$ID" "$T/paste.txt" <<'PY'
import hashlib, json, subprocess, sys
cairn, data, sid, path = sys.argv[1:]
want = open(path, "rb").read()
events = [json.loads(l) for l in subprocess.run([cairn, "--data-dir", data, "log", "cat", sid], capture_output=True, text=True).stdout.splitlines()]
msg = [e for e in events if e["type"] == "user/message"][0]["data"]
sys.exit(0 if msg["blob"]["size"] == len(want) and msg["blob"]["sha256"] == hashlib.sha256(want).hexdigest() else 1)
PY

printf 'fake end\033[201~\rMORE' >"$T/fake.txt"
TM load-buffer -b fake "$T/fake.txt"
TM paste-buffer -p -r -b fake -t p
check "a paste that fakes its end, then CR: all of it is in the composer, the CR a newline" wait_for p "^  MORE$"
check "... the faked end marker shown as text" wait_for p '^> fake end\^\[\[201~$'
keys p Enter
# The prompts of the log once every turn ended: without the fix the CR
# sent "fake end" alone, and Enter then "MORE"; the composer keeps
# control characters as visible text (ESC as ^[).
prompts_settled() {
	"$CAIRN" --data-dir "$DATA" log cat "$ID" | python3 -c '
import json, sys
E = [json.loads(l) for l in sys.stdin]
msgs = [e["data"].get("text") for e in E if e["type"] == "user/message"]
ends = [e for e in E if e["type"] == "turn/end"]
sys.exit(0 if len(msgs) >= 2 and len(ends) == len(msgs) else 1)'
}
for _ in $(seq 200); do prompts_settled && break; sleep 0.05; done
check "... Enter sends it as one prompt, the marker and the newline in it" python3 - "$CAIRN" "$DATA" "$ID" <<'PY'
import json, subprocess, sys
cairn, data, sid = sys.argv[1:]
events = [json.loads(l) for l in subprocess.run([cairn, "--data-dir", data, "log", "cat", sid], capture_output=True, text=True).stdout.splitlines()]
msgs = [e["data"].get("text") for e in events if e["type"] == "user/message"]
sys.exit(0 if msgs[1:] == ["fake end^[[201~\nMORE"] else 1)
PY
finish
