#!/usr/bin/env bash
# test_reindex_crash.sh — `cairn doctor --reindex` is killed with SIGKILL
# at random instants while it rebuilds the catalog of a few hundred
# sessions. After every kill each session's durable watermark must still
# be there, unchanged (they are not in the logs: a rebuild that loses one
# lets a damaged final frame pass for a torn tail). Then a final frame
# damaged below its watermark is still reported corrupt (exit 4) by
# `doctor`, and `log append` refuses it rather than cutting it.
# REINDEX_KILLS (default 100) sets the number of kills.
source "$(dirname "$0")/lib.sh"

KILLS=${REINDEX_KILLS:-100}
NSESS=${REINDEX_SESSIONS:-150}
D="$CAIRN_HOME"

# The watermarks as the catalog holds them, one "id len seq" a line, read
# by Python's own SQLite (schema 5 kept them in the session rows).
watermarks() {
	python3 - "$D/index.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
try:
    rows = db.execute("SELECT session, len, seq FROM watermarks ORDER BY session").fetchall()
except sqlite3.OperationalError:
    rows = db.execute("SELECT id, wm_len, wm_seq FROM sessions WHERE wm_len IS NOT NULL"
                      " ORDER BY id").fetchall()
for r in rows:
    print(*r)
PY
}

for ((i = 0; i < NSESS; i++)); do
	printf '{"type":"user/message","data":{"text":"hello %d"}}\n' "$i" |
		"$CAIRN" log append --new --no-cwd >"$T/new.out" 2>"$T/new.err" || break
	read -r sid next <"$T/new.out"
	printf '{"type":"user/message","data":{"text":"again %d"}}\n' "$i" |
		"$CAIRN" log append "$sid" --expect-seq "$next" >/dev/null 2>>"$T/new.err" || break
done
watermarks >"$T/wm.want" 2>"$T/wm.err"
cp "$T/wm.want" "$T/wm.first"
have=$(wc -l <"$T/wm.want")
if [ "$have" -eq "$NSESS" ] && [ ! -s "$T/new.err" ]; then
	ok "$NSESS sessions, each with its watermark"
else
	not_ok "$NSESS sessions, each with its watermark" "$have watermarks" "$(head -c 400 "$T/new.err" "$T/wm.err")"
	finish
fi

# How long one rebuild takes: the kills land anywhere in it.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
"$CAIRN" doctor --reindex >/dev/null 2>&1
span=$(($(now_ms) - t0 + 5))

landed=0 lost=()
for ((k = 0; k < KILLS; k++)); do
	"$CAIRN" doctor --reindex >/dev/null 2>&1 &
	pid=$!
	r=$((RANDOM % span))
	printf -v delay '%d.%03d' $((r / 1000)) $((r % 1000))
	sleep "$delay"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ $? -eq 137 ] && landed=$((landed + 1))
	watermarks >"$T/wm.got" 2>"$T/wm.err"
	if ! cmp -s "$T/wm.want" "$T/wm.got"; then
		lost+=("kill $k after ${delay}s: $(diff "$T/wm.want" "$T/wm.got" | grep -c '^<') of $NSESS watermarks lost or changed $(head -c 200 "$T/wm.err")")
		cp "$T/wm.got" "$T/wm.want.$k"
		watermarks >"$T/wm.want" 2>/dev/null # go on from what is left
	fi
done
desc="$KILLS kills of doctor --reindex ($landed inside a rebuild of ${span} ms): every watermark kept"
if [ ${#lost[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${lost[@]:0:10}"; fi
# Kills that all came after the rebuild ended would prove nothing.
check "a good share of kills landed inside a rebuild ($landed of $KILLS)" [ "$landed" -ge $((KILLS / 4)) ]

# A damaged final frame below the watermark: corruption, not a torn tail.
"$CAIRN" doctor --reindex >/dev/null 2>&1
read -r sid len seq <<<"$(head -n 1 "$T/wm.first")"
log=$(ls "$D"/sessions/*/"$sid"/session.jsonl.zst)
truncate -s $((len - 3)) "$log"
cp "$log" "$T/damaged"
expect_code 4 "doctor after the kills reports the damaged final frame as corruption" "$CAIRN" doctor
check "doctor names the session" grep -q "$sid: corrupt" <<<"$OUT"
expect_code 4 "log append refuses the damaged log" \
	"$CAIRN" log append "$sid" --expect-seq "$seq" <<<'{"type":"user/message","data":{"text":"x"}}'
check "nothing was cut from it" cmp -s "$log" "$T/damaged"
finish
