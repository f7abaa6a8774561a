#!/usr/bin/env python3
"""crash_tools.py — headless turns with tools (`cairn -p --json --approve
all`) killed with SIGKILL while the agent loop runs. The fake model server
answers a "tools" prompt with two shell calls in one step:

  A  the slow one: its first effect is a snapshot of the session's log
     taken by another process (`cairn log cat` into a file), then it
     appends "TAG a PID" to a marker file, sleeps in the background
     ("TAG sleep PID"), waits, and prints a line;
  B  the quick one: its own snapshot, "TAG b PID", a short sleep;

then, once their results are sent, a slow text stream (the step after the
tools). TAG names the run (every run gets its own CRASH_RUN in its
environment, which tools inherit), so the marker file says which run ran
which command, and how often.

Kills land at chosen instants: while A runs (after its marker line: B's
tool/call is durable and B never started), right after the run printed a
tool/call (--json prints an event once it is durable), while B runs, in
the stream after the tools, and at random instants over the whole run.
Headless, nothing waits between a call's tool/call and its tool/started
(--approve all answers at once; ask denies), and the first call's are
saved in one batch: the call that is durable but never started is B, while
A runs (the summary shows what the kills after a printed tool/call found).
One kill in eight must land while A runs (they close a call of each kind):
if the timed instants leave that short (a busy machine runs this process
late), kills are aimed at it, each the moment A's marker line is seen (A
then sleeps A_SLEEP more), at most 3 x the quota runs; the phase check
fails, saying how many landed, only when they run out.
After every kill:

- the session reopens: `inspect` reads it (ok or torn), `log cat` reads
  it; every event the killed run printed is in the log at its seq;
- intent before effect: a command that wrote its marker line took its
  snapshot before, and the snapshot holds its call's tool/started (and no
  result): the call was durable as started before its first effect;
- a call whose result is in the log left no live process of its group;
- repair (explicit, by the next turn, or deferred to the next killed run,
  which then opens the session itself) closes every call without a result:
  a started one `outcome_unknown`, its text starting "outcome unknown:", a
  never started one `not_executed`, "not executed:", both synthetic with
  source_seqs naming the call; every call gets exactly one result; the turn
  ends interrupted;
- nothing is re-run: each command ran at most once per killed run, never in
  a run that did not ask for it (repair, the next turn), and a call closed
  as not executed never ran at all;
- the next turn exits 0, and every request sent after a repair (the fake
  server checks the history as strictly as the real APIs) gives the model
  the results as the log holds them, in order: the closers' texts verbatim.

Sessions alternate between the OpenAI and Anthropic protocols. What a
SIGKILL leaves of a running command is checked too: the command's process
group is a session of its own (never cairn's), and its reaper ends it
with cairn (docs/tools.md): the slow command's sleep, a member of that
group, must be gone within ORPHAN_WAIT s of the kill; what is not is a
problem, and is killed at the end, by pid and start time (the sleep is
short: tests/cli/test_tool_reaper.sh is the test that fails when the
group outlives cairn).

Environment:
  CAIRN              the binary (tests/run.sh sets it)
  CRASH_TOOLS_KILLS  kills (default 24: about 30 s on two cores)
  CRASH_TOOLS_SEED   the random seed (default: from the clock; the summary
                     names it, so a failing run can be replayed)
  CRASH_TOOLS_KEEP   a directory: the data of a failing run is copied there

Prints TAP; run by tests/cli/test_crash_tools.sh.
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import crash_turn  # noqa: E402  (tap, FAILED and the fake server's reader)
import crashkit  # noqa: E402
from crash_turn import tap  # noqa: E402

A_SLEEP = 0.8      # seconds the slow command sleeps
ORPHAN_WAIT = 3.0  # seconds a killed cairn's command group may take to end
B_SLEEP = 0.2      # and the quick one
STALL_MS = 100     # the server's wait before each reply
RATE = 60          # stream writes per second
STEP2 = 30         # deltas of the stream after the tools (0.5 s)
RANDOM_SPAN = 2.4  # random kills fall in [0, this) after the start
PER_SESSION = 4    # kills per session
WAIT = 20.0        # longest wait for anything to happen
CLOSED_LEAD = {"outcome_unknown": "outcome unknown: ", "not_executed": "not executed: "}


def snap_cmd(letter, then):
    """A shell command: the log as another process reads it, then the
    marker line, then `then`."""
    return ('"$CRASH_CAIRN" --data-dir "$CRASH_DATA" log cat "$CRASH_SESSION" '
            f'>"$CRASH_MARKS/$CRASH_RUN.{letter}.seen" 2>&1; '
            f'echo "$CRASH_RUN {letter} $$" >>"$CRASH_MARKS/lines"; {then}')


CMD_A = snap_cmd("a", f'sleep {A_SLEEP} & echo "$CRASH_RUN sleep $!" >>"$CRASH_MARKS/lines"; wait; '
                      'echo "a finished"')
CMD_B = snap_cmd("b", f"sleep {B_SLEEP}; echo b finished")


def script():
    def calls():
        return [{"id": "call_a", "name": "shell", "arguments": json.dumps({"command": CMD_A})},
                {"id": "call_b", "name": "shell", "arguments": json.dumps({"command": CMD_B})}]
    slow = {"split": "event", "rate": RATE, "stall_before_ms": STALL_MS}
    return {"routes": [
        {"prompt_prefix": "tools ", "reply": dict(slow, deltas=["running ", "the ", "tools"],
                                                  tool_calls=calls())},
        {"prompt_prefix": "tools ", "after_tool": True,
         "reply": dict(slow, deltas=[f"w{i:02d} " for i in range(STEP2)])},
        {"prompt_prefix": "hello ", "reply": {"text": "hello there"}},
        {"prompt_prefix": "next ", "reply": {"text": "noted; go on", "pieces": 3}},
    ]}


class Fake(crash_turn.Fake):
    """The fake model server with the tool script (crash_turn.Fake's readers)."""

    def __init__(self, tmp):  # pylint: disable=super-init-not-called
        self.dir = tmp
        self.record = os.path.join(tmp, "record.jsonl")
        self.sent = os.path.join(tmp, "sent.jsonl")
        sp = os.path.join(tmp, "script.json")
        with open(sp, "w") as f:
            json.dump(script(), f)
        for p in (self.record, self.sent):
            open(p, "w").close()
        self.p = subprocess.Popen([sys.executable, crash_turn.FAKE, "--script", sp, "--record", self.record,
                                   "--sent-log", self.sent, "--watch-stdin"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.port = int(self.p.stdout.readline())
        self.rec_off = 0
        self.sent_off = 0
        self.sent_lines = {}


def tool_messages(proto, body):
    """[(provider id, text)] of the tool results a request carries, in order."""
    out = []
    for m in body.get("messages", []):
        if proto == "openai":
            if m.get("role") == "tool":
                out.append((m.get("tool_call_id"), m.get("content")))
            continue
        c = m.get("content")
        for b in c if m.get("role") == "user" and isinstance(c, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                t = b.get("content")
                if isinstance(t, list):
                    t = "".join(x.get("text", "") for x in t if isinstance(x, dict))
                out.append((b.get("tool_use_id"), t))
    return out


def proc_stat(pid):
    """(state, pgrp, session, start time) of a live process, else None
    (zombies count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            line = f.read()
    except OSError:
        return None
    parts = line[line.rfind(")") + 2:].split()
    if parts[0] in ("Z", "X"):
        return None
    return parts[0], int(parts[2]), int(parts[3]), int(parts[19])


class Killed:
    def __init__(self, tag, prompt, target):
        self.tag, self.prompt, self.target = tag, prompt, target
        self.printed = []
        self.exit = None
        self.phase = None


class Session(crash_turn.Session):
    """A session (its id, protocol, acknowledged events, kills) and what
    repair must do to it."""

    def __init__(self, proto):
        super().__init__(proto)
        self.expect = {}      # call_id -> the status repair must give it
        self.open = False     # a killed turn not yet closed


class CrashTools:
    def __init__(self, cairn, seed, kills):
        crashkit.setup(self, cairn, seed, kills, "crash-tools", Fake)
        self.marks = os.path.join(self.tmp, "marks")
        os.makedirs(self.marks)
        self.lines_path = os.path.join(self.marks, "lines")
        open(self.lines_path, "w").close()
        self.env.update(CRASH_CAIRN=cairn, CRASH_DATA=self.data, CRASH_MARKS=self.marks)
        self.problems = []
        self.kills = self.runs = self.counter = 0
        self.phases = {}
        self.after_call = {}       # phases of the kills right after a tool/call was printed
        self.closed = {"outcome_unknown": 0, "not_executed": 0}
        self.repairs = {"explicit": 0, "on_open": 0, "deferred": 0}
        self.killed_tags = set()   # runs that were asked to run the tools
        self.not_executed = set()  # (tag, letter): closed as not executed, so never to run
        self.orphans = 0           # killed runs that left the slow command's group alive
        self.left = {}             # pid -> start time: what the kills left running
        self.requests_checked = 0

    # ---- running cairn ----

    # crash_turn's readers: they use only cairn_run and problem.
    problem = crash_turn.Crash.problem
    log_cat = crash_turn.Crash.log_cat
    inspect = crash_turn.Crash.inspect

    def cairn_run(self, *args, tag="check", session=""):
        env = dict(self.env, CRASH_RUN=tag, CRASH_SESSION=session)
        p = subprocess.run([self.cairn, "--data-dir", self.data, *args], cwd=self.work, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def marker_lines(self):
        """{(tag, letter): [pid, ...]} of the marker file's whole lines."""
        with open(self.lines_path) as f:
            data = f.read()
        out = {}
        for x in data[:data.rfind("\n") + 1].splitlines():
            tag, letter, pid = x.split()
            out.setdefault((tag, letter), []).append(int(pid))
        return out

    def wait_for(self, p, cond):
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            v = cond()
            if v:
                return v
            if p.poll() is not None:
                return None
            time.sleep(0.002)
        return None

    def new_session(self, proto):
        s = Session(proto)
        self.counter += 1
        rc, out, err = self.cairn_run("-p", f"hello {self.counter}", "--provider", proto, "--model", "m-tools",
                                      "--json")
        if rc != 0:
            self.problem(f"the first turn of a {proto} session: exit {rc}: {err[:300]}")
            return None
        s.id = json.loads(out.splitlines()[-1])["session"]
        self.fake.new_requests()
        return s

    # ---- one killed run ----

    def run_killed(self, s, target, aim=False):
        """Run a tools prompt on s and kill it at an instant chosen for
        target; aimed (aim), at once when that instant begins."""
        self.counter += 1
        k = Killed(f"k{self.counter}", f"tools {self.counter} {self.rng.randrange(1 << 30):08x}", target)
        self.killed_tags.add(k.tag)
        out_path = os.path.join(self.tmp, "run.out")
        env = dict(self.env, CRASH_RUN=k.tag, CRASH_SESSION=s.id)
        self.fake.new_requests()
        with open(out_path, "wb") as out:
            t0 = time.monotonic()
            p = subprocess.Popen([self.cairn, "--data-dir", self.data, "-p", k.prompt, "--json", "--session",
                                  s.id, "--approve", "all"], cwd=self.work, env=env,
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL)
        reqs = []

        def printed(typ):
            with open(out_path, "rb") as f:
                return f'"type":"{typ}"'.encode() in f.read()

        def request_after_tools():
            reqs.extend(self.fake.new_requests())
            return next((r for r in reqs if r["route"] == 1), None)

        at = None
        if target == "a_running":
            w = self.wait_for(p, lambda: (k.tag, "a") in self.marker_lines())
            at = w and time.monotonic() + (0 if aim else self.rng.uniform(0, A_SLEEP * 0.9))
        elif target == "b_running":
            w = self.wait_for(p, lambda: (k.tag, "b") in self.marker_lines())
            at = w and time.monotonic() + self.rng.uniform(0, B_SLEEP * 0.9)
        elif target == "call_printed":
            at = self.wait_for(p, lambda: printed("tool/call") and time.monotonic())
        elif target == "step2":
            r = self.wait_for(p, request_after_tools)
            at = r and r["t"] + self.rng.uniform(0, STALL_MS / 1000 + STEP2 / RATE)
        else:
            at = t0 + self.rng.uniform(0, RANDOM_SPAN)
        while at and time.monotonic() < at and p.poll() is None:
            time.sleep(min(0.002, max(0, at - time.monotonic())))
        killed = p.poll() is None
        if killed:
            os.kill(p.pid, signal.SIGKILL)
        k.exit = p.wait()
        self.runs += 1
        reqs.extend(self.fake.new_requests())
        with open(out_path, "rb") as f:
            raw = f.read()
        for x in raw[:raw.rfind(b"\n") + 1].decode("utf-8").splitlines():
            o = json.loads(x)
            if "seq" in o:
                k.printed.append(o)
                s.acked[o["seq"]] = (o["type"], o.get("turn"), o["data"])
        if not killed and k.exit != 0:
            self.problem(f"{k.tag} ({target}) ended before its kill with exit {k.exit}")
        for r in reqs:
            self.check_request(s, r)
        if killed:
            self.kills += 1
            s.kills += 1
        return k, killed

    # ---- checking ----

    def turn_of(self, evs, prompt):
        """The events of the turn whose user message is prompt."""
        tid = next((e["turn"] for e in evs if e["type"] == "user/message" and e["data"]["text"] == prompt), None)
        return tid, [e for e in evs if tid and e.get("turn") == tid]

    def calls_of(self, evs):
        """{provider id: {call_id, seq, started, result}} of one turn's events."""
        calls = {}
        by_id = {}
        for e in evs:
            d = e["data"]
            if e["type"] == "tool/call":
                c = {"call_id": d["call_id"], "seq": e["seq"], "started": False, "result": None}
                calls[d.get("provider_id")] = by_id[d["call_id"]] = c
            elif e["type"] == "tool/started" and d["call_id"] in by_id:
                by_id[d["call_id"]]["started"] = True
            elif e["type"] == "tool/result" and d["call_id"] in by_id:
                if by_id[d["call_id"]]["result"] is not None:
                    self.problem(f"call {d['call_id']} has two results")
                by_id[d["call_id"]]["result"] = d
        return calls

    def verify_acked(self, s, evs):
        if [e.get("seq") for e in evs] != list(range(len(evs))):
            self.problem(f"{s.id}: seqs not contiguous from 0")
            return False
        for seq, (typ, turn, data) in sorted(s.acked.items()):
            if seq >= len(evs) or (evs[seq]["type"], evs[seq].get("turn"), evs[seq]["data"]) != (typ, turn, data):
                self.problem(f"{s.id}: acknowledged seq {seq} ({typ}) lost or changed")
                return False
        return True

    def after_kill(self, s, k, killed=True):
        """What the kill left: the log readable, every printed event in it,
        intent before effect, no process of a finished call, what repair
        must close and how."""
        if self.inspect(s.id) is None:
            return
        evs = self.log_cat(s.id)
        if evs is None or not self.verify_acked(s, evs):
            return
        tid, tev = self.turn_of(evs, k.prompt)
        calls = self.calls_of(tev)
        a, b = calls.get("call_a"), calls.get("call_b")
        ended = any(e["type"] == "turn/end" for e in tev)
        if tid is None:
            k.phase = "before_turn"
        elif not calls:
            k.phase = "before_calls"
        elif ended:
            k.phase = "ended"
        elif not a["started"]:
            k.phase = "a_unstarted"
        elif a["result"] is None:
            k.phase = "a_running"
        elif not b["started"]:
            k.phase = "b_unstarted"
        elif b["result"] is None:
            k.phase = "b_running"
        else:
            k.phase = "after_tools"
        if not killed:
            k.phase = "not_killed"
        self.phases[k.phase] = self.phases.get(k.phase, 0) + 1
        if k.target == "call_printed":
            self.after_call[k.phase] = self.after_call.get(k.phase, 0) + 1
        if tid is not None and not ended:
            s.open = True
        lines = self.marker_lines()
        for letter, c in (("a", a), ("b", b)):
            ran = (k.tag, letter) in lines
            if ran and (c is None or not c["started"]):
                self.problem(f"{k.tag}: command {letter} ran, its call is not durable as started: "
                             f"{c and c['call_id']}")
            if ran:
                self.check_snapshot(k, letter, c)
            if c is not None and c["result"] is None:
                s.expect[c["call_id"]] = "outcome_unknown" if c["started"] else "not_executed"
                if not c["started"]:
                    self.not_executed.add((k.tag, letter))
        sh = lines.get((k.tag, "a"), [None])[0]
        for pid in lines.get((k.tag, "sleep"), []):
            st = proc_stat(pid)
            if st is None:
                continue
            if a and a["result"] is not None:
                self.problem(f"{k.tag}: A's result is in the log, its sleep {pid} still runs")
                continue
            if st[1] != st[2] or st[2] == os.getsid(0):
                self.problem(f"{k.tag}: the sleep {pid} is in group {st[1]}, session {st[2]}, not a session "
                             "of its own")
            t0 = time.monotonic()
            while (proc_stat(pid) or (0, 0, 0, None))[3] == st[3] and time.monotonic() - t0 < ORPHAN_WAIT:
                time.sleep(0.01)
            if (proc_stat(pid) or (0, 0, 0, None))[3] == st[3]:
                self.orphans += 1
                self.problem(f"{k.tag}: cairn was killed, the sleep {pid} of its command still runs "
                             f"{ORPHAN_WAIT:.0f} s later")
                for p in (pid, sh):
                    pst = proc_stat(p)
                    if pst:
                        self.left[p] = pst[3]

    def check_snapshot(self, k, letter, c):
        """The log as the command read it when it began: its call there,
        started, without a result."""
        path = os.path.join(self.marks, f"{k.tag}.{letter}.seen")
        try:
            with open(path) as f:
                seen = [json.loads(x) for x in f.read().splitlines() if x.startswith("{")]
        except (OSError, ValueError) as e:
            self.problem(f"{k.tag}: the snapshot of command {letter} is unreadable: {e}")
            return
        _, tev = self.turn_of(seen, k.prompt)
        sc = self.calls_of(tev).get(f"call_{letter}")
        if sc is None or not sc["started"] or sc["result"] is not None:
            self.problem(f"{k.tag}: when command {letter} began, the log held its call as {sc}")

    def check_request(self, s, r):
        """A request carrying tool results: the fake server accepted it (the
        history is well formed), and its results are the log's, in order,
        a closer's text verbatim."""
        if r.get("route") is None:
            self.problem(f"request {r['n']} was not answered by a route (rejected?): "
                         f"{json.dumps(r['body'])[:300]}")
            return
        got = tool_messages(s.proto, r["body"])
        if not got:
            return
        self.requests_checked += 1
        evs = self.log_cat(s.id)
        if evs is None:
            return
        calls = {e["data"]["call_id"]: e["data"] for e in evs if e["type"] == "tool/call"}
        want = [(calls[e["data"]["call_id"]].get("provider_id"), e["data"]) for e in evs
                if e["type"] == "tool/result"][:len(got)]
        for i, ((pid, text), (wpid, d)) in enumerate(zip(got, want)):
            out = d.get("output") or "(no output)"
            lead = CLOSED_LEAD.get(d["status"])
            if pid != wpid or text != out or (lead and not text.startswith(lead)):
                self.problem(f"request {r['n']}: tool result {i} sent as {pid} {text!r:.160}, "
                             f"the log has {wpid} {d['status']} {out!r:.160}")
                return
        if len(want) < len(got):
            self.problem(f"request {r['n']}: {len(got)} tool results sent, the log has {len(want)}")

    def close(self, s, way):
        """Repair (explicit, or by the next turn) and the next turn; then
        every call of the session has exactly one result, each killed
        call closed as expected."""
        self.repairs[way] += 1
        if way == "explicit":
            rc, out, err = self.cairn_run("repair", "--json", s.id, tag="repair", session=s.id)
            if rc != 0:
                self.problem(f"repair {s.id}: exit {rc}: {err[:300]}")
                return
            for c in json.loads(out).get("appended", []):
                d = c["data"]
                if c["type"] == "tool/result" and s.expect.get(d["call_id"]) != d["status"]:
                    self.problem(f"repair closed {d['call_id']} as {d['status']}, "
                                 f"expected {s.expect.get(d['call_id'])}")
        self.counter += 1
        tag = f"n{self.counter}"
        self.fake.new_requests()
        rc, out, err = self.cairn_run("-p", f"next {self.counter}", "--session", s.id, "--json",
                                      "--approve", "all", tag=tag, session=s.id)
        reqs = self.fake.new_requests()
        if rc != 0:
            self.problem(f"the next turn on {s.id}: exit {rc}: {err[:400]}")
            return
        for x in out.splitlines():
            o = json.loads(x)
            if "seq" in o:
                s.acked[o["seq"]] = (o["type"], o.get("turn"), o["data"])
        if len(reqs) != 1:
            self.problem(f"the next turn made {len(reqs)} requests")
        for r in reqs:
            self.check_request(s, r)
        self.verify_closed(s)

    def verify_closed(self, s):
        evs = self.log_cat(s.id)
        if evs is None or not self.verify_acked(s, evs):
            return
        results = {}
        for e in evs:
            if e["type"] == "tool/result":
                results.setdefault(e["data"]["call_id"], []).append((e["seq"], e["data"]))
        for e in evs:
            if e["type"] != "tool/call":
                continue
            cid = e["data"]["call_id"]
            got = results.get(cid, [])
            if len(got) != 1:
                self.problem(f"{s.id}: call {cid} has {len(got)} results")
                continue
            want = s.expect.get(cid)
            d = got[0][1]
            if want is None:
                continue
            if d["status"] != want or not d.get("synthetic") or d.get("source_seqs") != [e["seq"]] or \
                    not d.get("output", "").startswith(CLOSED_LEAD[want]):
                self.problem(f"{s.id}: call {cid} closed as {json.dumps(d)[:300]}, expected {want}")
            else:
                self.closed[want] += 1
        turns = {}
        for e in evs:
            if e.get("turn"):
                turns.setdefault(e["turn"], []).append(e)
        for tid, tev in turns.items():
            ends = [e["data"] for e in tev if e["type"] == "turn/end"]
            if len(ends) != 1:
                self.problem(f"{s.id}: turn {tid} has {len(ends)} turn/end")
            elif ends[0]["outcome"] not in ("completed", "interrupted"):
                self.problem(f"{s.id}: turn {tid} ended {ends[0]}")
        s.expect = {}
        s.open = False

    def check_runs(self):
        """No command re-run: each ran at most once, only by a run asked for
        it, never one closed as not executed."""
        for (tag, letter), pids in self.marker_lines().items():
            if letter == "sleep":
                continue
            if tag not in self.killed_tags:
                self.problem(f"command {letter} ran in run {tag}, which never asked for it (a re-run)")
            elif len(pids) > 1:
                self.problem(f"command {letter} of run {tag} ran {len(pids)} times")
            elif (tag, letter) in self.not_executed:
                self.problem(f"command {letter} of run {tag} was closed as not executed, then it ran")

    # ---- the run ----

    def main(self):
        t0 = time.monotonic()
        # Each block of eight runs aims at every instant, in a random order;
        # the first run at a running command, so even a short run closes
        # a call of each kind.
        targets = ["a_running", "a_running", "call_printed", "b_running", "step2", "random", "random", "random"]
        plan = []
        self.session, self.nsess = None, 0
        while self.kills < self.kills_wanted:
            if not plan:
                plan = self.rng.sample(targets, len(targets))
                if self.runs == 0:
                    plan.remove("a_running")
                    plan.insert(0, "a_running")
            if not self.one_run(plan.pop(0)):
                break
        # A share of the kills while A runs (they close a call of each
        # kind): the random instants may leave it short on a busy machine,
        # so then kills are aimed at it (the instant A's marker line is
        # seen: A sleeps A_SLEEP more), at most 3 x the quota runs.
        k = self.kills
        need = {"a_running": max(1, k // 8)}
        random_phases = dict(self.phases)
        tries = 0
        while self.phases.get("a_running", 0) < need["a_running"] and tries < 3 * need["a_running"]:
            tries += 1
            if not self.one_run("a_running", aim=True):
                break
        s, nsess = self.session, self.nsess
        if s is not None and s.open:
            self.close(s, "on_open")
        stuck = self.wait_orphans()
        self.check_runs()
        secs = time.monotonic() - t0
        tap(not self.problems, f"{self.kills} kills of {self.runs} runs with tools in {nsess} sessions: every "
            "log reopens, no acknowledged event lost, every command began after its tool/started was durable, "
            "ran at most once and never again, every call closed once (outcome unknown when started, not "
            "executed when not), the next turns well formed and told so", self.problems)
        ph = self.phases
        short = [f"{p}: {ph.get(p, 0)} < {n} kills landed there, {random_phases.get(p, 0)} of them at random and "
                 f"{ph.get(p, 0) - random_phases.get(p, 0)} of {tries} runs aimed at it"
                 for p, n in need.items() if ph.get(p, 0) < n]
        short += [f"{st}: none closed" for st, n in self.closed.items() if n == 0]
        tap(not short, "kills in every phase: " + ", ".join(f"{p} {n}" for p, n in sorted(ph.items())) +
            (f" ({self.kills - k} of {tries} runs aimed at a_running)" if tries else "") +
            f"; closed by repair: {self.closed}; right after a printed tool/call: {self.after_call} (the "
            "first call's tool/call and tool/started are saved in one batch)", short)
        tap(not crash_turn.FAILED, f"crash-tools summary (seed {self.seed}): {self.kills} kills in {secs:.0f}s, "
            f"repairs {self.repairs}, {self.requests_checked} requests with tool results checked, "
            f"{self.orphans} kills left the running command's group alive {ORPHAN_WAIT:.0f} s on (its reaper "
            f"ends it with cairn), {stuck} of its processes still ran {A_SLEEP + 2:.1f} s later")

    def one_run(self, target, aim=False):
        """A killed run on the current session (a new one after
        PER_SESSION kills), its checks, then repair as chosen; False when
        no session could be made."""
        s = self.session
        if s is None or s.kills >= PER_SESSION:
            if s is not None and s.open:
                self.close(s, "on_open")
            s = self.session = self.new_session("openai" if self.nsess % 2 == 0 else "anthropic")
            self.nsess += 1
            if s is None:
                return False
        k, killed = self.run_killed(s, target, aim)
        self.after_kill(s, k, killed)  # a run that ended first is checked the same way
        self.check_runs()
        if not killed:
            return True
        way = self.rng.choice(["explicit", "on_open", "on_open", "deferred"])
        if way == "deferred" and s.kills < PER_SESSION:
            self.repairs["deferred"] += 1
        elif s.open:
            self.close(s, way)
        return True

    def still_running(self):
        """What the kills left that still runs (a pid counts while its start
        time is the one recorded: pids are reused)."""
        return [p for p, t in self.left.items() if (proc_stat(p) or (0, 0, 0, None))[3] == t]

    def wait_orphans(self):
        """Wait for what the kills left to end by itself (the slow command's
        sleep ends); returns how many still ran after A_SLEEP + 2 s."""
        end = time.monotonic() + A_SLEEP + 2
        while self.still_running() and time.monotonic() < end:
            time.sleep(0.05)
        return len(self.still_running())

    def cleanup(self):
        for p in self.still_running():
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self.fake.stop()
        crashkit.keep_failed(self.tmp, "CRASH_TOOLS")


if __name__ == "__main__":
    sys.exit(crashkit.run_main(CrashTools, "CRASH_TOOLS", 24))
