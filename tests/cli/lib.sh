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
