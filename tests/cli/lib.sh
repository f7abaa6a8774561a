# lib.sh — tiny TAP helpers for CLI tests that drive the real binary.
# Each script sources this, uses a private data root, and prints TAP lines.
set -u
: "${CAIRN:?run through tests/run.sh or set CAIRN to the binary}"
T=$(mktemp -d)
export CAIRN_HOME="$T/home"
trap 'rm -rf "$T"' EXIT
_n=0
_failed=0

ok() { _n=$((_n + 1)); echo "ok $_n - $1"; }
not_ok() { _n=$((_n + 1)); _failed=1; echo "not ok $_n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

# expect_code CODE DESC CMD...: run CMD, check its exit code; output in $OUT/$ERR.
expect_code() {
	local want=$1 desc=$2
	shift 2
	OUT=$("$@" 2>"$T/stderr")
	local rc=$?
	ERR=$(cat "$T/stderr")
	if [ "$rc" -eq "$want" ]; then ok "$desc"; else not_ok "$desc" "exit $rc, wanted $want" "stdout: $OUT" "stderr: $ERR"; fi
}

# check DESC COND...: a test(1)-style or any command condition.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc" "failed: $*"; fi
}

# json FIELD: extract a top-level field of $OUT with python3's json module.
json() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]); print(json.dumps(v[sys.argv[2]]) if not isinstance(v[sys.argv[2]],str) else v[sys.argv[2]])' "$OUT" "$1"; }

finish() { exit $_failed; }

# The fake model server (tests/fake/fake_model.py), for scripts that talk
# to a model. start_fake SCRIPT-JSON: starts it, sets PORT and FAKE_PID;
# every request is recorded in $T/record.jsonl.
FAKE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../fake" && pwd)/fake_model.py"
start_fake() {
	printf '%s' "$1" >"$T/script.json"
	rm -f "$T/port" "$T/record.jsonl"
	python3 "$FAKE" --script "$T/script.json" --record "$T/record.jsonl" --port-file "$T/port" >/dev/null &
	FAKE_PID=$!
	for _ in $(seq 200); do [ -s "$T/port" ] && break; sleep 0.05; done
	PORT=$(cat "$T/port")
}
stop_fake() { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; }
