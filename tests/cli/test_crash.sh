#!/usr/bin/env bash
# test_crash.sh — a writer appending batches in a loop (tests/crash/
# crashwriter.c) is killed with SIGKILL at random instants. After every
# kill the log must read as ok or torn, hold every acknowledged batch with
# exactly the content written (checked through `cairn log cat`), keep its
# acknowledged prefix byte-identical, and take the writer back: it reopens,
# repairs what the kill left and continues at the right seq.
# CRASH_KILLS (default 200) sets the number of kills; one TAP line per group
# of 20 kills, then a summary.
source "$(dirname "$0")/lib.sh"

W=${CAIRN_BUILD:-$(dirname "$CAIRN")}/tests/crashwriter
KILLS=${CRASH_KILLS:-200}
GROUP=20       # kills per TAP line
PER_SESSION=5  # kills per session: keeps each log a few MB
D="$CAIRN_HOME"
if [ ! -x "$W" ]; then
	not_ok "the crash writer is built" "missing $W (make build-tests)"
	finish
fi

# tick SECONDS: sleep without starting a process (a read that times out).
mkfifo "$T/tick"
exec 9<>"$T/tick"
tick() { read -r -t "$1" -u 9 _ || true; }
# wait_ready PID: until the writer has opened (and repaired) its log.
wait_ready() {
	local i line
	for ((i = 0; i < 2500; i++)); do
		if read -r line <"$T/run.out" && [[ $line == READY* || $line == REPAIR* ]]; then return 0; fi
		kill -0 "$1" 2>/dev/null || return 1
		tick 0.002
	done
	return 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
appending=0 total_kills=0 total_torn=0 total_repairs=0 total_early=0 total_acks=0 lost=0

# Per group state.
id='' last_ack=0 problems=()

problem() { problems+=("kill $total_kills: $*"); }

new_session() {
	id='' last_ack=0
	: >"$T/prefix"
	if ! "$W" "$D" --new 1 >"$T/new.out" 2>"$T/new.err"; then
		problem "crashwriter --new failed: $(cat "$T/new.err")"
		return 1
	fi
	id=$(sed -n 's/^ID //p' "$T/new.out")
	last_ack=$(sed -n 's/^ACK //p' "$T/new.out")
	[ -n "$id" ] && [ -n "$last_ack" ] || { problem "crashwriter --new printed no ID/ACK"; return 1; }
}

# Verify the log after a kill; $1 = what the writer printed. Few processes
# per kill (this runs hundreds of times, also under sanitizers).
verify() {
	local w v acks=0 a='' out status='' next=0
	while read -r w v; do
		case "$w" in
		ACK) a=$v acks=$((acks + 1)) ;;
		REPAIR) total_repairs=$((total_repairs + 1)) ;;
		esac
	done <"$1"
	if [ -n "$a" ]; then
		if [ "$a" -lt "$last_ack" ]; then
			problem "acknowledged seq went back from $last_ack to $a"
		fi
		last_ack=$a
		total_acks=$((total_acks + acks))
	else
		total_early=$((total_early + 1))
	fi
	out=$("$CAIRN" inspect --json "$id" 2>"$T/err")
	[[ $out =~ \"status\":\"([a-z]+)\" ]] && status=${BASH_REMATCH[1]}
	[[ $out =~ \"next_seq\":([0-9]+) ]] && next=${BASH_REMATCH[1]}
	case "$status" in
	ok) ;;
	torn)
		total_torn=$((total_torn + 1))
		if ! "$CAIRN" repair --json "$id" >"$T/repair.out" 2>"$T/err"; then
			problem "repair of the torn log failed: $(cat "$T/err")"
			lost=1
			return
		fi
		out=$("$CAIRN" inspect --json "$id" 2>"$T/err")
		if [[ $out != *'"status":"ok"'* ]]; then
			problem "after repair: $out"
			lost=1
			return
		fi
		;;
	*)
		problem "inspect after the kill: $out $(cat "$T/err")"
		lost=1
		return
		;;
	esac
	if [ "$next" -lt "$last_ack" ]; then
		problem "next_seq $next < acknowledged $last_ack: acknowledged events lost"
		lost=1
	fi
	# Every acknowledged event, exactly as written; the previously checked
	# acknowledged lines byte-identical.
	if ! "$CAIRN" log cat "$id" 2>"$T/err" | "$W" --check "$last_ack" "$id" "$T/prefix" >"$T/check.out" 2>&1 ||
		[ -s "$T/err" ]; then
		problem "log cat | check: $(head -c 300 "$T/check.out") $(head -c 300 "$T/err")"
		lost=1
	fi
}

# One run of the writer, killed 0-30 ms after it started (one kill in four)
# or after it opened its log and is appending (the others).
kill_once() {
	: >"$T/run.out"
	"$W" "$D" "$id" >"$T/run.out" 2>"$T/run.err" &
	local pid=$! ms=$((RANDOM % 31)) delay
	if [ $((RANDOM % 4)) -ne 0 ]; then
		wait_ready "$pid"
		appending=$((appending + 1))
	fi
	printf -v delay '0.%03d' "$ms"
	tick "$delay"
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		problem "the writer stopped by itself (exit $?): $(head -c 300 "$T/run.err")"
	else
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
	fi
	total_kills=$((total_kills + 1))
	verify "$T/run.out"
}

group=0
while [ "$total_kills" -lt "$KILLS" ]; do
	group=$((group + 1))
	problems=()
	first=$((total_kills + 1))
	n=$((KILLS - total_kills < GROUP ? KILLS - total_kills : GROUP))
	torn0=$total_torn rep0=$total_repairs
	acked=0
	for ((k = 0; k < n; k++)); do
		if [ $((k % PER_SESSION)) -eq 0 ]; then
			new_session || { total_kills=$((total_kills + 1)); continue; }
		fi
		kill_once
		if [ $(((k + 1) % PER_SESSION)) -eq 0 ] || [ $((k + 1)) -eq "$n" ]; then
			# The survivor must still take appends at the right seq.
			if "$W" "$D" "$id" 3 >"$T/run.out" 2>"$T/run.err"; then
				verify "$T/run.out"
			else
				problem "the writer could not continue after the last kill: $(cat "$T/run.err")"
			fi
			acked=$((acked + last_ack))
		fi
	done
	desc="crash group $group: kills $first-$total_kills, $acked events acknowledged, $((total_torn - torn0)) torn tails cut, $((total_repairs - rep0)) reopen repairs"
	if [ ${#problems[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${problems[@]:0:10}"; fi
done

# Deaths inside a write. SIGKILL rarely lands inside the one pwrite(2) of
# a batch, so also let the kernel end the writer in the middle of one: with
# a file size limit a few KiB above the log, the append that crosses it is
# cut short and the process dies of SIGXFSZ, leaving a real torn frame.
problems=()
xfsz=0 xfsz_torn0=$total_torn
for ((k = 0; k < 20; k++)); do
	if [ $((k % PER_SESSION)) -eq 0 ]; then new_session || continue; fi
	f=$(ls "$D"/sessions/*/"$id"/session.jsonl.zst)
	limit=$(($(stat -c %s "$f") / 1024 + 1 + RANDOM % 48))
	# (The subshell's own stderr hides the shell's "File size limit exceeded".)
	(
		ulimit -f "$limit"
		"$W" "$D" "$id" >"$T/run.out" 2>"$T/run.err"
	) 2>/dev/null
	rc=$?
	if [ "$rc" -eq $((128 + 25)) ]; then
		xfsz=$((xfsz + 1))
	elif ! grep -qi 'too large' "$T/run.err"; then
		problem "the writer under a size limit exited $rc: $(head -c 300 "$T/run.err")"
	fi
	total_kills=$((total_kills + 1))
	verify "$T/run.out"
	# Back without a limit: reopen, repair if needed, continue.
	if "$W" "$D" "$id" 3 >"$T/run.out" 2>"$T/run.err"; then
		verify "$T/run.out"
	else
		problem "the writer could not continue: $(cat "$T/run.err")"
	fi
done
torn_here=$((total_torn - xfsz_torn0))
if [ "$xfsz" -gt 0 ] && [ "$torn_here" -eq 0 ]; then
	problem "$xfsz writers died inside a write but no log was torn"
fi
desc="20 writers ended inside a write (SIGXFSZ: $xfsz): $torn_here torn tails cut, every acknowledged event kept"
if [ ${#problems[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${problems[@]:0:10}"; fi

# Kills during first publication: a session exists completely or not at all.
P="$T/publish"
problems=()
for ((k = 0; k < 30; k++)); do
	"$W" "$P" --new 0 >"$T/run.out" 2>"$T/run.err" &
	pid=$!
	printf -v delay '0.%03d' $((RANDOM % 25))
	tick "$delay"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid_id=$(sed -n 's/^ID //p' "$T/run.out")
	pid_ack=$(sed -n 's/^ACK //p' "$T/run.out" | tail -n 1)
	# Once it said ID the session exists, with every acknowledged batch.
	if [ -n "$pid_id" ] &&
		! "$CAIRN" --data-dir "$P" log cat "$pid_id" 2>/dev/null |
		"$W" --check "${pid_ack:-1}" "$pid_id" >"$T/check.out" 2>&1; then
		problem "new session $pid_id (acknowledged ${pid_ack:-none}): $(head -c 300 "$T/check.out")"
	fi
done
bad=0
nsess=0
for f in "$P"/sessions/*/*/session.jsonl.zst; do
	[ -e "$f" ] || continue
	nsess=$((nsess + 1))
	s=$("$CAIRN" inspect --json "$f" 2>&1)
	grep -q '"status":"\(ok\|torn\)"' <<<"$s" || { bad=$((bad + 1)); problem "$f: $s"; }
done
staging=$(find "$P" -name '*.tmp' 2>/dev/null | wc -l)
desc="30 kills during first publication: $nsess sessions, all readable ($staging staging files left by kills)"
if [ ${#problems[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${problems[@]:0:10}"; fi

secs=$((($(now_ms) - t0) / 1000))
summary="crash summary: $total_kills kills (SIGKILL and SIGXFSZ) in ${secs}s ($appending timed after the writer was ready), $total_acks acknowledged batches, $total_torn torn tails, $total_repairs reopen repairs, $total_early kills before the first ack of a run"
if [ "$lost" -eq 0 ] && [ "$_failed" -eq 0 ]; then
	ok "$summary: no acknowledged event lost"
else
	not_ok "$summary" "an acknowledged event was lost or the log became unreadable"
fi
finish
