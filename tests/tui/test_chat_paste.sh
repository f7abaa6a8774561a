#!/usr/bin/env bash
# A 1 MB bracketed paste stays responsive (read in large chunks, not a
# byte per read) and is sent whole: the prompt over the inline limit is
# stored in a blob with the pasted bytes; control bytes in it are inert.
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
finish
