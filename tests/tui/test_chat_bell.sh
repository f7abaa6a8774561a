#!/usr/bin/env bash
# The screen rings when a turn ends and nobody typed for 5 s: BEL (tmux
# flags a window that rang), an OSC 9 notification where configured (read
# from a pseudo-terminal of this test's own: tmux swallows OSC 9), and
# nothing with "bell": false. The offline model is paced so that its
# answer outlasts the 5 s.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
conf() { printf '{"providers": {"offline": {"pace_ms": 70}}, "bell": %s}\n' "$1" >"$T/config/cairn/config.json"; }
flag() { TM display -p -t "$1" '#{window_bell_flag}'; }

conf '"bel"'
start rings
wait_for rings "^ idle" >/dev/null
keys rings "ring when done" Enter
check "a long answer streams" wait_for rings "streaming"
check "... and ends" wait_for rings "^ idle" 30
check "the window rang (BEL) at its end" test "$(flag rings)" = 1

conf false
start quiet
wait_for quiet "^ idle" >/dev/null
keys quiet "no ring" Enter
wait_for quiet "streaming" >/dev/null
check "with \"bell\": false, the same answer ends" wait_for quiet "^ idle" 30
check "... without ringing" test "$(flag quiet)" = 0

# OSC 9: the bytes cairn writes, on a pty.
conf '"osc9"'
cat >"$T/osc9.py" <<'EOF'
import os, pty, select, sys, time
cairn, data, work = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(work)
    os.environ['TERM'] = 'xterm-256color'
    os.execv(cairn, [cairn, '--data-dir', data])
out = b''
def pump(until, secs):
    global out
    end = time.time() + secs
    while until not in out and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 65536)
            except OSError:
                return False
    return until in out
ok = pump(b'idle', 10)
os.write(fd, b'notify me\r')
ok = ok and pump(b'\x1b]9;cairn: the turn has ended\x07', 40)
os.write(fd, b'\x04')
pump(b'resume:', 10)
os.waitpid(pid, 0)
sys.exit(0 if ok else 1)
EOF
check "with \"bell\": \"osc9\", an OSC 9 notification says the turn has ended" \
	python3 "$T/osc9.py" "$CAIRN" "$DATA" "$T/work"
finish
