#!/usr/bin/env python3
"""crash_turn.py — headless turns (`cairn -p --json`) against a slow stream
from the fake model server, killed with SIGKILL at random instants: before
the BEFORE save is acknowledged, while the request waits for its first
byte, in the middle of the stream, and during settlement (the full save).
After every kill:

- the session reopens: `inspect` reads it (ok or torn), `log cat` reads it,
  `sessions` lists it as opening it will find it (interrupted with a turn
  open, else idle), and `repair` (or, as often, the next open) cuts a torn
  tail and closes the open turn as interrupted (turn/end error class
  "interrupted");
- nothing acknowledged is lost: every event the killed run printed (--json
  prints each event once it is durable) is in the log at its seq, with the
  same type, turn and data;
- at most two batch windows plus 50 ms of stream are lost: the text the
  server had sent more than 250 ms before the kill (its --sent-log gives
  the CLOCK_MONOTONIC time of every write; the kill's time is taken on the
  same clock just before kill(2)) is in the log, and the log holds nothing
  the server did not send; the bound grows by the time the run's threads
  waited for a CPU or a disk meanwhile (/proc/PID/task/*/schedstat and
  state D, sampled while this process waits: on a busy machine a run
  cannot read or save in time it is not given);
- the next turn (`cairn -p --session ID`) exits 0 and sends the model the
  whole history as the log holds it (each earlier prompt, each kept partial
  answer) — and the fake server rejects a malformed history as the real
  APIs do;
- a queued prompt is neither lost nor run twice: about a third of the
  runs take 2 or 3 prompts (`cairn -p A -p B ...`: the later ones are
  queued input, input/queued, each promoted after the turn before it
  completed and was saved, its input/dequeued in the same batch as the
  turn/start whose client_submit_id is its input_id), and the kill is aimed
  into one of their turns or between two of them (after a reply ended,
  before the next prompt's request: the settlement and the next BEFORE
  save). The log must queue every input_id once, start it at most once,
  right after its input/dequeued, with the queued text, and only right
  after the prompt before it completed; every input/dequeued must be right
  before its turn/start. Over the whole run each prompt is sent at most
  once (the server's record names the prompt of every request), never one
  still queued: a later run reports an earlier run's queued input on
  stderr and does not send it.

Sessions alternate between the OpenAI and Anthropic protocols; each takes
a few kills. After one kill in four nothing is checked beyond reading: the
next killed run opens the session, repairs it and may itself be killed
doing so. Each kill is classified by what was observed (what the run had
printed, what the server had received and sent before the kill).

Every phase must take its share of the kills (the quotas scale with
CRASH_TURN_KILLS: before_ack 1, first_byte and settle 1 in 25, stream 1 in
10, between 1 in 50; at least 1 each). Random instants hit the short ones
by chance (a settlement lasts 2-5 ms, which a busy machine may not give
this process in time), so after the random kills each phase short of its
quota gets kills aimed at it, at most 3 x its quota runs, which land there
whatever the timing: before the BEFORE save, the kill follows the start at
once; waiting for the first byte and in the stream, the reply holds (the
fake server's hold) before its status line or its write MID and the kill
comes while it holds; at the end of a reply (settle, between) the run is
stopped (SIGSTOP) while the reply holds before its terminating chunk, the
chunk is sent, the files the run may write are limited (RLIMIT_FSIZE) to
its log's size plus 0-63 bytes, and the run goes on until its first write
past that limit ends it (SIGXFSZ): inside or right before its log's next
frame, before its settlement is acknowledged. The phase check fails,
naming the phase, how many kills landed there at random and how many of
the aimed runs, only when the aimed runs run out: when a phase's promise
breaks (a run that settles without writing its log, say). The stream bound
counts from when the run last ran (Run.t_ran: the stop, not the kill).

Environment:
  CAIRN             the binary (tests/run.sh sets it)
  CRASH_TURN_KILLS  kills at random (default 100: about 90 s on two cores),
                    then the aimed ones if a phase is short (a few); the
                    long run is CRASH_TURN_KILLS=1000 (15-21 minutes)
  CRASH_TURN_SEED   the random seed (default: from the clock; every TAP
                    summary names it, so a failing run can be replayed)
  CRASH_TURN_KEEP   a directory: the data of a failing run is copied there
  CRASH_TURN_TARGETS  aim every kill at these instants only, e.g. "settle"
                    or "start,stream" (of start, first_byte, stream, settle,
                    between; the phase check then fails for the others:
                    only these are aimed at)

Prints TAP (one line per group of 20 kills, one for the aimed kills if
any, then phase coverage and a summary with the figures); run by
tests/cli/test_crash_turn.sh.

What is known of a session (Session: the events runs printed, the prompts
of killed runs not yet checked) is checked against its whole log after
every kill (verify_log, verify_queue), so a check is added in one place.
The input/queued, input/dequeued and turn/start events a run printed are
acknowledged like any other (Session.acked). Every prompt's text is
unique and its prefix picks its route (quick, crash-short, crash, next;
held-head, held-mid, held-end before one of them: the reply holds there):
the prompts before the one a kill aims at get quick replies.
"""
import base64
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "fake", "fake_model.py")
sys.path.insert(0, os.path.dirname(FAKE))
from fake_model import last_user_text  # noqa: E402  (the prompt a request carries, as routes see it)

BOUND = 0.250        # two capture batch windows (2 x 100 ms) plus 50 ms of stream
STALL_MS = 300       # the server's wait before the first byte
RATE = 100           # stream writes per second
LONG = 150           # deltas of a slow reply (1.5 s of stream)
SHORT = 30           # deltas of a short one (kills at settlement wait for its end)
QUICK = 10           # deltas of a queued run's prompts before the one a kill aims at
QUEUED = 0.35        # the share of runs given 2 or 3 prompts (the later ones queued input)
BETWEEN = 0.004      # a kill between queued prompts: this long after the reply before ended
                     # (the next request follows 5-20 ms later: settlement, then a BEFORE save)
MID = LONG // 3      # a kill aimed into the stream: the write its reply holds before
TRIES = 3            # a phase short of its quota after the random kills gets up to TRIES x quota aimed runs
GROUP = 20           # kills per TAP line
PER_SESSION = 5      # kills per session
WAIT = 20.0          # longest wait for anything to happen

N = 0
FAILED = False


def tap(ok, desc, why=()):
    global N, FAILED
    N += 1
    print(f"{'ok' if ok else 'not ok'} {N} - {desc}", flush=True)
    if not ok:
        FAILED = True
        for w in list(why)[:12]:
            print(f"#   {w}"[:2000], flush=True)


def deltas_of(length):
    """The reply's text pieces: numbered words, some with multibyte characters."""
    extra = ["", "é", "", "€", "", "😀", ""]
    return [f"w{i:03d}{extra[i % len(extra)]} " for i in range(length)]


def slow_reply(length, rate=RATE, stall_ms=STALL_MS):
    return {"deltas": deltas_of(length), "split": "event", "rate": rate,
            "stall_before_ms": stall_ms, "usage": {"input": 7, "output": length}}


class Fake:
    """The fake model server: one for the whole run, answering by prompt."""

    def __init__(self, tmp):
        self.dir = tmp
        self.record = os.path.join(tmp, "record.jsonl")
        self.sent = os.path.join(tmp, "sent.jsonl")
        self.holds = os.path.join(tmp, "holds")
        os.makedirs(self.holds)

        def held(reply, at):
            return dict(reply, hold={"at": at, "until": self.holds})
        script = {"routes": [
            # Aimed kills: the reply holds at a point until released.
            {"prompt_prefix": "held-head crash ", "reply": held(slow_reply(LONG), "head")},
            {"prompt_prefix": "held-mid crash ", "reply": held(slow_reply(LONG), MID)},
            {"prompt_prefix": "held-end crash-short ", "reply": held(slow_reply(SHORT), "end")},
            {"prompt_prefix": "held-end quick ", "reply": held(slow_reply(QUICK, 1000, 0), "end")},
            {"prompt_prefix": "crash-short ", "reply": slow_reply(SHORT)},
            {"prompt_prefix": "crash ", "reply": slow_reply(LONG)},
            {"prompt_prefix": "quick ", "reply": slow_reply(QUICK, 1000, 0)},
            {"prompt_prefix": "next ", "reply": {"text": "noted; go on", "pieces": 3}},
        ]}
        sp = os.path.join(tmp, "script.json")
        with open(sp, "w") as f:
            json.dump(script, f)
        for p in (self.record, self.sent):
            open(p, "w").close()
        self.p = subprocess.Popen([sys.executable, FAKE, "--script", sp, "--record", self.record,
                                   "--sent-log", self.sent, "--watch-stdin"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.port = int(self.p.stdout.readline())
        self.rec_off = 0
        self.sent_off = 0
        self.sent_lines = {}  # request n -> [sent-log lines]

    def stop(self):
        self.p.stdin.close()
        self.p.wait()

    def new_requests(self):
        """Requests recorded since the last call."""
        with open(self.record, encoding="utf-8") as f:
            f.seek(self.rec_off)
            data = f.read()
        cut = data.rfind("\n") + 1
        self.rec_off += len(data[:cut].encode("utf-8"))
        return [json.loads(x) for x in data[:cut].splitlines() if x]

    def poll_sent(self):
        """Read the sent-log lines written since the last call."""
        with open(self.sent, "rb") as f:
            f.seek(self.sent_off)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self.sent_off += cut
        for x in data[:cut].splitlines():
            if x:
                line = json.loads(x)
                self.sent_lines.setdefault(line["n"], []).append(line)

    def writes(self, n):
        """The sent-log lines of request n: its writes and where it held."""
        self.poll_sent()
        return self.sent_lines.get(n, [])

    def release(self, n):
        """Let request n's reply go on from where it holds."""
        open(os.path.join(self.holds, str(n)), "w").close()


def text_deltas(proto, writes, upto):
    """[(t, text)]: the text deltas in the SSE events of writes made before
    upto, each with the time of the write that completed its event."""
    out, buf = [], b""
    for w in writes:
        if w["t"] >= upto:
            break
        buf += base64.b64decode(w["data"])
        while b"\n\n" in buf:
            block, buf = buf.split(b"\n\n", 1)
            for line in block.decode("utf-8").split("\n"):
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                d = json.loads(line[6:])
                if proto == "openai":
                    ch = d.get("choices") or []
                    text = (ch[0].get("delta") or {}).get("content") if ch else None
                else:
                    delta = d.get("delta") or {}
                    text = delta.get("text") if d.get("type") == "content_block_delta" and \
                        delta.get("type") == "text_delta" else None
                if text:
                    out.append((w["t"], text))
    return out


def wire_messages(proto, body):
    """[(role, [text, ...])] of a request's messages, the system prompt
    left out: a string content is one text, a list its text parts."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") in ("system", "developer"):
            continue
        c = m.get("content")
        if isinstance(c, list):
            c = [p.get("text") for p in c if isinstance(p, dict) and p.get("type") == "text"]
        else:
            c = [c]
        out.append((m.get("role"), c))
    return out


def expected_messages(proto, pairs):
    """[(role, [text, ...])] the protocol's encoder makes of [(role, text)]:
    Anthropic wants roles to alternate, so messages of one role in a row
    are one message of several text blocks; OpenAI keeps them apart."""
    out = []
    for role, text in pairs:
        if proto == "anthropic" and out and out[-1][0] == role:
            out[-1][1].append(text)
        else:
            out.append((role, [text]))
    return out


class Run:
    """One killed run: its prompts (Killed, in -p order), its result line
    (when it printed one), when it was killed and the phase that fell in."""

    def __init__(self):
        self.prompts = []
        self.result = None
        self.t_kill = None
        self.t_stop = None    # a run stopped before its end (stop_at_end): when
        self.phase = None
        self.active = None    # the index of the prompt whose request was the last before the kill
        self.aimed = False
        self.pid = None
        self.waits = []       # [(t, ns, disk)]: how long its threads had waited for a CPU by then, and
                              # whether one was blocked in the kernel (state D: a disk) (sample)

    def sample(self, force=False):
        """Note how long the run's threads have waited on a run queue
        (/proc/PID/task/*/schedstat: ready to run, given no CPU) and
        whether one is blocked on a disk (state D), at most every 5 ms
        unless forced."""
        now = time.monotonic()
        if self.pid is None or (not force and self.waits and now - self.waits[-1][0] < 0.005):
            return
        total, disk = 0, False
        try:
            for t in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[1])
                with open(f"/proc/{self.pid}/task/{t}/stat") as f:
                    line = f.read()
                disk = disk or line[line.rfind(")") + 2] == "D"
        except (OSError, IndexError, ValueError):
            return  # gone
        self.waits.append((now, total, disk))

    def waited(self, t0, t1):
        """Seconds of t0..t1 the run was kept waiting: its threads' waits
        for a CPU (from the samples at or before each), plus every gap
        between samples that begins or ends with a thread blocked on a
        disk. Errs long (threads waiting at once add up; a gap counts
        whole): what it excuses is the machine's load, never a run that
        had the time and did not save."""
        if not self.waits:
            return 0.0
        i0 = max([i for i, w in enumerate(self.waits) if w[0] <= t0] or [0])
        i1 = max([i for i, w in enumerate(self.waits) if w[0] <= t1] or [0])
        cpu = max(0, self.waits[i1][1] - self.waits[i0][1]) / 1e9
        disk = sum(self.waits[i][0] - self.waits[i - 1][0] for i in range(i0 + 1, min(i1 + 2, len(self.waits)))
                   if self.waits[i][2] or self.waits[i - 1][2])
        return cpu + disk

    @property
    def t_ran(self):
        """The last instant the run ran without a break before its kill:
        what the stream bound counts from (a stopped run saves nothing)."""
        return self.t_stop if self.t_stop is not None else self.t_kill


class Killed:
    """What one prompt of a killed run left to check: its text, the events
    of its turn the run printed, the request that carried it (the server
    answers each prompt under the route of its prefix) and its run."""

    def __init__(self, run, index, prompt, length):
        self.run, self.index = run, index
        self.prompt, self.length = prompt, length
        self.turn = None
        self.printed = []
        self.request = None   # the record line of its request

    result = property(lambda self: self.run.result)
    t_kill = property(lambda self: self.run.t_kill)
    phase = property(lambda self: self.run.phase)
    prev = property(lambda self: self.run.prompts[self.index - 1] if self.index else None)


class Session:
    def __init__(self, proto):
        self.proto = proto
        self.id = None
        self.acked = {}        # seq -> (type, turn, data) printed by some run
        self.killed = []       # Killed runs whose turns are still to be checked
        self.kills = 0
        self.closed = False    # repaired and continued since the last kill
        self.torn_cut = 0      # bytes of a torn frame left at the end of its log
        self.queue = (0, 0)    # inputs its log queued, and how many of them started


class Crash:
    def __init__(self, cairn, seed, kills):
        self.cairn = cairn
        self.seed = seed
        self.rng = random.Random(seed)
        self.kills_wanted = kills
        self.tmp = tempfile.mkdtemp(prefix="crash-turn-")
        self.data = os.path.join(self.tmp, "data")
        self.work = os.path.join(self.tmp, "work")
        os.makedirs(self.work)
        self.fake = Fake(self.tmp)
        base = f"http://127.0.0.1:{self.fake.port}"
        self.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.tmp, "config"),
                        OPENAI_BASE_URL=base + "/v1", OPENAI_API_KEY="sk-test",
                        ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="ant-test")
        self.env.pop("CAIRN_HOME", None)
        self.kills = 0
        self.runs = 0
        self.phases = {}
        self.lost_ms = []      # per killed stream: how much sent text the log lacks (ms before the kill)
        self.repairs = {"explicit": 0, "on_open": 0, "deferred": 0}
        self.torn = 0          # torn tails kills left
        self.torn_made = 0     # torn tails tear() left
        self.problems = []
        self.sessions_done = []
        self.counter = 0
        self.sent_prompts = {}  # prompt -> requests that carried it
        self.queued = {"runs": 0, "queued": 0, "started": 0}  # runs of several prompts, inputs in the logs
        self.run = None         # the run under way (its waits are sampled while this process polls)
        self.max_waited = 0.0   # the most a lost text's bound was stretched by waits for a CPU or a disk

    # ---- running cairn ----

    def cairn_run(self, *args, timeout=60):
        try:
            p = subprocess.run([self.cairn, "--data-dir", self.data, *args], cwd=self.work, env=self.env,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "", f"cairn {' '.join(args)[:200]}: still running after {timeout} s (killed)"
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def problem(self, what):
        self.problems.append(f"kill {self.kills}: {what}")

    def session_dirs(self, with_log=True):
        """Session directories: those holding a log, or (with_log False)
        those without one: what a kill during the first publication may
        leave, which is no session (doctor calls it a leftover)."""
        root = os.path.join(self.data, "sessions")
        out = set()
        if os.path.isdir(root):
            for proj in os.listdir(root):
                pd = os.path.join(root, proj)
                for sid in os.listdir(pd) if os.path.isdir(pd) else []:
                    if os.path.exists(os.path.join(pd, sid, "session.jsonl.zst")) == with_log:
                        out.add(sid)
        return out

    def wait_for(self, p, cond):
        """Poll cond() every millisecond until it returns something, the
        process exits or WAIT passes."""
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            if self.run is not None:
                self.run.sample()
            v = cond()
            if v is not None:
                return v
            if p.poll() is not None:
                return None
            time.sleep(0.001)
        return None

    def take_requests(self):
        """Requests recorded since the last call, each with the prompt it
        carried ("prompt"); over the whole run a prompt is sent at most
        once (a killed turn is never retried, queued input of an earlier
        run never sent)."""
        reqs = self.fake.new_requests()
        for r in reqs:
            r["prompt"] = last_user_text(r["body"])
            self.sent_prompts[r["prompt"]] = self.sent_prompts.get(r["prompt"], 0) + 1
            if self.sent_prompts[r["prompt"]] > 1:
                self.problem(f"'{r['prompt']}' was sent {self.sent_prompts[r['prompt']]} times")
            if r.get("route") is None:
                self.problem(f"a request was not answered by a route: {r}")
        return reqs

    def run_killed(self, s, target, n=1, j=0, aim=False):
        """Run n prompts on session s (`-p A -p B ...`: the later ones are
        queued input) and kill the run at an instant chosen for target in
        prompt j's turn (start, first_byte, stream, settle; between: after
        the reply to prompt j-1 ended, before prompt j's request). The
        prompts before j get quick replies, so the kill finds them done.
        Aimed (aim), the kill cannot miss its phase however late this
        process runs: at once for start; else the reply the kill aims at
        holds (the fake server's hold) before its first byte, in its
        stream or before its end, and the kill comes while it holds, or
        for an end (settle, between) the run is stopped there, the end
        sent, and the run goes on until it writes past its log's end
        (stop_at_end)."""
        run = Run()
        run.aimed = aim
        held = (j - 1 if target == "between" else j) if aim and target != "start" else None
        for i in range(n):
            length = QUICK if i < j else SHORT if target == "settle" and i == j else LONG
            prefix = {QUICK: "quick", SHORT: "crash-short", LONG: "crash"}[length]
            if i == held:
                prefix = {"first_byte": "held-head ", "stream": "held-mid "}.get(target, "held-end ") + prefix
            self.counter += 1
            run.prompts.append(Killed(run, i, f"{prefix} {self.counter} {self.rng.randrange(1 << 30):08x}",
                                      length))
        argv = [self.cairn, "--data-dir", self.data]
        for k in run.prompts:
            argv += ["-p", k.prompt]
        argv += ["--json"]
        if s.id:
            argv += ["--session", s.id]
        else:
            argv += ["--provider", s.proto, "--model", "m-crash"]
        self.take_requests()
        self.fake.poll_sent()
        before = self.session_dirs() if not s.id else None
        out_path = os.path.join(self.tmp, "run.out")
        err_path = os.path.join(self.tmp, "run.err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.monotonic()
            p = subprocess.Popen(argv, cwd=self.work, env=self.env, stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=err)
        run.pid, self.run = p.pid, run
        run.sample(True)
        reqs = []

        def request(i):
            """The request that carried prompt i, once it arrived."""
            def f():
                reqs.extend(self.take_requests())
                return next((r for r in reqs if r["prompt"] == run.prompts[i].prompt), None)
            return f

        def sent(i, mark):
            def f():
                r = request(i)()
                if r is None:
                    return None
                for w in self.fake.writes(r["n"]):
                    if w.get(mark):
                        return w
                return None
            return f

        def holding(i):
            return sent(i, "hold")

        at = None
        if aim and target == "start":
            at = t0
        elif aim:
            w = self.wait_for(p, holding(held))
            if w and target in ("settle", "between"):
                self.stop_at_end(p, s, run, w["n"], out_path)
        elif target == "start":
            at = t0 + self.rng.uniform(0, 0.06)
        elif target == "first_byte":
            r = self.wait_for(p, request(j))
            at = r and r["t"] + self.rng.uniform(0, STALL_MS / 1000)
        elif target == "stream":
            w = self.wait_for(p, sent(j, "head"))
            at = w and w["t"] + self.rng.uniform(0, run.prompts[j].length / RATE)
        elif target == "between":
            w = self.wait_for(p, sent(j - 1, "end"))
            at = w and w["t"] + self.rng.uniform(0, BETWEEN)
        else:
            w = self.wait_for(p, sent(j, "end"))
            at = w and w["t"] + self.rng.uniform(0, 0.004)  # settling takes 2-5 ms
        if at is not None:
            while time.monotonic() < at and p.poll() is None:
                run.sample()
                time.sleep(min(0.002, max(0, at - time.monotonic())))
        killed = False
        if p.poll() is None:
            run.sample(True)
            run.t_kill = time.monotonic()
            os.kill(p.pid, signal.SIGKILL)
            killed = True
        rc = p.wait()
        self.run = None
        if run.t_stop is not None and rc == -signal.SIGXFSZ:
            killed = True  # stop_at_end: the write past the limit ended it
        self.runs += 1
        reqs.extend(self.take_requests())
        for r in reqs:
            self.fake.release(r["n"])  # a reply still held goes on to the closed socket
        with open(out_path, "rb") as f:
            raw = f.read()
        with open(err_path, "rb") as f:
            err_text = f.read().decode("utf-8", "replace")
        # Only whole lines were printed (a line cut by the kill proves nothing).
        lines = raw[:raw.rfind(b"\n") + 1].decode("utf-8").splitlines()
        printed = []
        for x in lines:
            o = json.loads(x)
            if o.get("type") == "result":
                run.result = o
            elif "seq" in o:
                printed.append(o)
        if not killed:
            if target != "settle" or j != n - 1 or rc != 0:
                self.problem(f"the run ended before its kill (target {target}, exit {rc}): {err_text[:300]}")
            if rc != 0:
                return None
        mine = {k.prompt: k for k in run.prompts}
        for r in reqs:
            if r["prompt"] not in mine:
                self.problem(f"the run sent '{r['prompt']}', not one of its prompts")
            else:
                mine[r["prompt"]].request = r
        # Which session: the one it printed, else a directory that appeared.
        ids = {o["session"] for o in printed} | ({run.result["session"]} if run.result else set())
        if len(ids) > 1:
            self.problem(f"events of several sessions printed: {ids}")
        if s.id is None:
            new = self.session_dirs() - before
            if ids:
                s.id = next(iter(ids))
            elif len(new) == 1:
                s.id = next(iter(new))
            elif len(new) > 1:
                self.problem(f"one run made several session directories: {new}")
        elif ids and ids != {s.id}:
            self.problem(f"printed events of {ids}, ran on {s.id}")
        # The prompts run in order, one turn each: the i-th turn/start is prompt i's.
        started = 0
        for o in printed:
            if o["type"] == "turn/start":
                if started < n:
                    run.prompts[started].turn = o["turn"]
                else:
                    self.problem(f"{started + 1} turns printed for {n} prompts")
                started += 1
            k = next((k for k in run.prompts if k.turn and k.turn == o.get("turn")), None)
            if k:
                k.printed.append(o)
            s.acked[o["seq"]] = (o["type"], o.get("turn"), o["data"])
        if not killed:
            return run
        self.kills += 1
        s.kills += 1
        s.closed = False
        run.phase = self.classify(run)
        self.phases[run.phase] = self.phases.get(run.phase, 0) + 1
        return run

    def stop_at_end(self, p, s, run, n, out_path):
        """Request n's reply holds before its end: stop the run (SIGSTOP),
        let the end go, limit the files the run may write (RLIMIT_FSIZE)
        to its log's size plus 0-63 bytes, and let it go on: the first
        write past the limit (the log's next frame, cut inside or before
        it; else a write at a larger offset of another file) ends it with
        SIGXFSZ, after the end arrived and before the settlement is
        acknowledged (--json prints nothing before the save it follows is
        durable), however late this process runs. A run still alive after
        WAIT is killed."""
        os.kill(p.pid, signal.SIGSTOP)
        end = time.monotonic() + WAIT
        while p.poll() is None and not self.stopped(p.pid) and time.monotonic() < end:
            time.sleep(0.001)
        if p.poll() is not None:
            return
        run.sample(True)
        run.t_stop = time.monotonic()
        log = self.log_path(s.id or self.printed_session(out_path))
        limit = (os.path.getsize(log) if log else 0) + self.rng.randrange(64)
        resource.prlimit(p.pid, resource.RLIMIT_CORE, (0, 0))
        resource.prlimit(p.pid, resource.RLIMIT_FSIZE, (limit, limit))
        self.fake.release(n)
        while not any(w.get("end") for w in self.fake.writes(n)) and time.monotonic() < end:
            time.sleep(0.001)
        run.t_kill = time.monotonic()  # not before: the end was sent before it
        os.kill(p.pid, signal.SIGCONT)
        try:
            p.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            pass

    @staticmethod
    def stopped(pid):
        """Is every thread of pid stopped?"""
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/stat") as f:
                    line = f.read()
                if line[line.rfind(")") + 2] not in "tT":
                    return False
        except OSError:
            return False
        return True

    def log_path(self, sid):
        root = os.path.join(self.data, "sessions")
        for proj in os.listdir(root) if sid and os.path.isdir(root) else []:
            path = os.path.join(root, proj, sid, "session.jsonl.zst")
            if os.path.exists(path):
                return path
        return None

    @staticmethod
    def printed_session(out_path):
        """The session the run's printed events name (its first run)."""
        with open(out_path, "rb") as f:
            raw = f.read()
        for x in raw[:raw.rfind(b"\n") + 1].splitlines():
            o = json.loads(x)
            if o.get("session"):
                return o["session"]
        return None

    def classify(self, run):
        """The phase the kill fell in, from what was observed before it:
        the prompt whose request arrived last before the kill and what the
        server had sent it; the end of its reply, with a prompt still to
        come, is 'between' (its settlement, the next one's BEFORE save)."""
        if run.result:
            return "after_result"
        arrived = [k for k in run.prompts if k.request and k.request["t"] < run.t_kill]
        if not arrived:
            return "before_request" if any(k.printed for k in run.prompts) else "before_ack"
        k = arrived[-1]
        run.active = k.index
        ws = [w for w in self.fake.writes(k.request["n"]) if w["t"] < run.t_kill and "hold" not in w]
        if any(w.get("end") for w in ws):
            return "between" if k.index < len(run.prompts) - 1 else "settle"
        if any(not w.get("head") for w in ws):
            return "stream"
        return "first_byte"

    # ---- checking ----

    def log_cat(self, sid):
        rc, out, err = self.cairn_run("log", "cat", sid)
        if rc != 0:
            self.problem(f"log cat {sid}: exit {rc}: {err[:300]}")
            return None
        return [json.loads(x) for x in out.splitlines() if x]

    def inspect(self, sid):
        rc, out, err = self.cairn_run("inspect", "--json", sid)
        try:
            o = json.loads(out)
        except ValueError:
            o = {}
        if rc != 0 or o.get("status") not in ("ok", "torn"):
            self.problem(f"inspect {sid}: exit {rc}: {out[:300]} {err[:300]}")
            return None
        return o

    def after_kill(self, s, run):
        """Reading checks always; then repair (explicitly, or by the next
        open) and the next turn, except one time in four."""
        if s.id is None:
            if any(k.printed for k in run.prompts):
                self.problem("events printed but no session found")
            return
        k = ([k for k in run.prompts if k.turn] or run.prompts[:1])[-1]  # the last turn it started
        ins = self.inspect(s.id)
        if ins is None:
            return
        if ins["status"] == "torn" and ins["torn_bytes"] != s.torn_cut:
            self.torn += 1  # left by this kill (not one tear() left and nothing opened since)
        s.torn_cut = ins.get("torn_bytes") or 0  # what a repair must cut
        # The open turn is the last the run printed, or the next prompt's
        # (its BEFORE save durable, the kill before it was printed).
        nxt = k.turn and k.index + 1 < len(run.prompts) and f"t{int(k.turn[1:]) + 1}"
        if k.turn and not run.result and ins.get("open_turn") not in (k.turn, nxt, None):
            self.problem(f"open turn {ins.get('open_turn')}, the killed one was {k.turn}")
        # The listing shows what opening the session will find.
        rc, out, err = self.cairn_run("sessions", "--json")
        row = next((o for o in json.loads(out) if o["id"] == s.id), None) if rc == 0 else None
        want = "interrupted" if ins.get("open_turn") else "idle"
        if row is None or row["status"] != want:
            self.problem(f"{s.id} listed as {row and row['status']} (exit {rc}), its log says {want}: "
                         f"{err[:200]}")
        evs = self.log_cat(s.id)
        if evs is None:
            return
        turns = self.verify_log(s, evs, closed=False)
        if ins["status"] == "ok" and turns and turns[-1]["end"] is None and self.rng.random() < 0.3:
            self.tear(s, ins, evs, turns[-1]["id"])
        way = self.rng.choice(["explicit", "on_open", "on_open", "deferred"])
        if way == "deferred" and s.kills < PER_SESSION:
            self.repairs["deferred"] += 1
            return
        self.close_and_continue(s, "explicit" if way == "explicit" else "on_open")

    def tear(self, s, ins, evs, turn):
        """Leave what a kill inside the next append leaves (SIGKILL seldom
        lands inside one write): a prefix of the frame the open turn would
        have written next, never the whole of it. The frame is built by
        hand — zstd's format with one raw block — and cut before its
        checksum, so a reader can only take it for a torn tail."""
        line = json.dumps({"seq": len(evs), "t": int(time.time() * 1000), "type": "assistant/text",
                           "turn": turn, "data": {"text": "TORN never acknowledged"}},
                          separators=(",", ":")).encode() + b"\n"
        frame = (b"\x28\xb5\x2f\xfd" + bytes([0xA4]) + len(line).to_bytes(4, "little") +
                 (1 | len(line) << 3).to_bytes(3, "little") + line)  # + 4 checksum bytes, never written
        cut = self.rng.randint(1, len(frame) - 1)
        with open(ins["path"], "ab") as f:
            f.write(frame[:cut])
        after = self.inspect(s.id)
        if after and (after["status"] != "torn" or after["torn_bytes"] != cut):
            self.problem(f"{cut} bytes of a torn frame appended, inspect says {json.dumps(after)[:300]}")
        s.torn_cut = cut
        self.torn_made += 1

    def close_and_continue(self, s, way):
        """Repair (explicit or by the next open), then the next turn."""
        self.repairs[way] += 1
        s.closed = True
        if way == "explicit":
            rc, out, err = self.cairn_run("repair", "--json", s.id)
            if rc != 0:
                self.problem(f"repair {s.id}: exit {rc}: {err[:300]}")
                return
            cut = json.loads(out).get("cut_bytes")
            if cut != s.torn_cut and (s.torn_cut or cut):
                self.problem(f"repair cut {cut} bytes, the torn tail had {s.torn_cut}")
            ins = self.inspect(s.id)
            if ins and (ins["status"] != "ok" or ins.get("open_turn") is not None or ins.get("torn_bytes")):
                self.problem(f"after repair: {json.dumps(ins)[:300]}")
        s.torn_cut = 0
        self.counter += 1
        prompt = f"next {self.counter}"
        self.take_requests()
        rc, out, err = self.cairn_run("-p", prompt, "--session", s.id, "--json")
        reqs = self.take_requests()
        if rc != 0:
            self.problem(f"the next turn on {s.id}: exit {rc}: {err[:400]} "
                         f"{[r.get('reply') for r in reqs]}")
            return
        for x in out.splitlines():
            o = json.loads(x)
            if "seq" in o:
                s.acked[o["seq"]] = (o["type"], o.get("turn"), o["data"])
        evs = self.log_cat(s.id)
        if evs is None:
            return
        turns = self.verify_log(s, evs, closed=True)
        if not turns or turns[-1]["user"] != prompt or turns[-1]["end"].get("outcome") != "completed":
            self.problem(f"the next turn is not the log's last, completed: {turns[-1:] if turns else None}")
            return
        if len(reqs) != 1 or reqs[0]["prompt"] != prompt:
            self.problem(f"the next turn made {len(reqs)} requests, for {[r['prompt'] for r in reqs]}")
            return
        want = []
        for t in turns[:-1]:
            want.append(("user", t["user"]))
            if t["text"]:
                want.append(("assistant", t["text"]))
        want.append(("user", prompt))
        want = expected_messages(s.proto, want)
        got = wire_messages(s.proto, reqs[0]["body"])
        if got != want:
            diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            self.problem(f"the next request's history differs from the log at message {diff}: "
                         f"sent {got[diff:diff + 2]}, log {want[diff:diff + 2]} "
                         f"({len(got)} vs {len(want)} messages)")

    def verify_log(self, s, evs, closed):
        """The log against what is known: seqs contiguous, every printed
        event at its seq unchanged, every killed turn within the stream
        bound; with closed, every turn ended exactly once (interrupted ones
        by repair). Returns the turns: user text, answer text, turn/end."""
        if [e.get("seq") for e in evs] != list(range(len(evs))):
            self.problem(f"{s.id}: seqs not contiguous from 0")
            return None
        for seq, (typ, turn, data) in sorted(s.acked.items()):
            if seq >= len(evs):
                self.problem(f"{s.id}: acknowledged seq {seq} ({typ}) lost: the log ends at {len(evs)}")
                return None
            e = evs[seq]
            if (e["type"], e.get("turn"), e["data"]) != (typ, turn, data):
                self.problem(f"{s.id}: seq {seq} printed as {typ} {json.dumps(data)[:120]}, "
                             f"logged as {e['type']} {json.dumps(e['data'])[:120]}")
                return None
        turns, cur = [], None
        for e in evs[1:]:
            typ, turn = e["type"], e.get("turn")
            if typ == "turn/start":
                if cur is not None and cur["end"] is None:
                    self.problem(f"{s.id}: turn {cur['id']} has no turn/end before turn {turn} starts")
                cur = {"id": turn, "user": None, "text": "", "end": None, "seq": e["seq"]}
                turns.append(cur)
                continue
            if turn is None:
                continue
            if cur is None or turn != cur["id"] or cur["end"] is not None:
                self.problem(f"{s.id}: seq {e['seq']} ({typ}) of turn {turn} outside its turn")
                return None
            if typ == "user/message":
                cur["user"] = e["data"]["text"]
            elif typ == "assistant/text":
                cur["text"] += e["data"]["text"]
            elif typ == "turn/end":
                cur["end"] = e["data"]
        if closed and turns and turns[-1]["end"] is None:
            self.problem(f"{s.id}: turn {turns[-1]['id']} still open after repair")
        self.verify_queue(s, evs, turns)
        by_prompt = {t["user"]: t for t in turns}
        keep = []
        for k in s.killed:
            t = by_prompt.get(k.prompt)
            if k.prev and t and not (by_prompt.get(k.prev.prompt) is not None and turns.index(
                    by_prompt[k.prev.prompt]) == turns.index(t) - 1 and (by_prompt[k.prev.prompt]["end"]
                                                                      or {}).get("outcome") == "completed"):
                self.problem(f"{s.id}: queued '{k.prompt}' started, but not right after '{k.prev.prompt}' "
                             "completed")
            if t is None:
                if k.printed:
                    self.problem(f"{s.id}: the killed turn '{k.prompt}' printed events but is not in the log")
                elif closed and k.request:
                    self.problem(f"{s.id}: a request went out for '{k.prompt}' but the log has no such turn")
                continue  # never became durable: nothing to check
            if k.turn and t["id"] != k.turn:
                self.problem(f"{s.id}: '{k.prompt}' printed as turn {k.turn}, logged as {t['id']}")
            self.check_bound(s, k, t)
            if t["end"] is None:
                keep.append(k)
                continue
            end = t["end"]
            if k.result and k.result.get("exit") == 0 and end.get("outcome") != "completed":
                self.problem(f"{s.id}: turn {t['id']} printed its result (exit 0), logged {end}")
            if end.get("outcome") == "interrupted":
                if not end.get("synthetic") or (end.get("error") or {}).get("class") != "interrupted":
                    self.problem(f"{s.id}: turn {t['id']} closed as {json.dumps(end)[:200]}")
            elif end.get("outcome") != "completed":
                self.problem(f"{s.id}: turn {t['id']} ended {end.get('outcome')}, not completed or interrupted")
        s.killed = keep if not closed else []
        if closed and keep:
            self.problem(f"{s.id}: turns left open: {[k.prompt for k in keep]}")
        return turns

    def verify_queue(self, s, evs, turns):
        """Queued input in the log: every input_id queued once; at most one
        turn/start has it as client_submit_id, with its input/dequeued
        right before it (one batch: a kill can neither lose the prompt nor
        run it twice), and that turn's prompt is the queued text; every
        input/dequeued is such a pair (headless takes none back). A prompt
        still queued was never sent: headless reports the input of an
        earlier run, it does not send it. Printed input/queued events are
        acknowledged, so the seq check above keeps them from being lost."""
        queued, started = {}, {}
        user = {t["id"]: t["user"] for t in turns}
        for e in evs:
            d = e.get("data") or {}
            if e["type"] == "input/queued":
                if d.get("input_id") in queued:
                    self.problem(f"{s.id}: input {d.get('input_id')} queued twice")
                queued[d.get("input_id")] = d.get("text")
            elif e["type"] == "input/dequeued":
                nxt = evs[e["seq"] + 1] if e["seq"] + 1 < len(evs) else {}
                if d.get("input_id") not in queued or nxt.get("type") != "turn/start" or \
                        (nxt.get("data") or {}).get("client_submit_id") != d.get("input_id"):
                    self.problem(f"{s.id}: input/dequeued of {d.get('input_id')} at seq {e['seq']} is not "
                                 f"right before the turn/start it became: {json.dumps(nxt)[:200]}")
            elif e["type"] == "turn/start" and d.get("client_submit_id") in queued:
                iid = d["client_submit_id"]
                prev = evs[e["seq"] - 1]
                if iid in started:
                    self.problem(f"{s.id}: input {iid} started twice: turns {started[iid]} and {e['turn']}")
                started[iid] = e["turn"]
                if prev["type"] != "input/dequeued" or prev["data"].get("input_id") != iid:
                    self.problem(f"{s.id}: turn {e['turn']} took input {iid} without its input/dequeued "
                                 f"right before it")
                if user.get(e["turn"]) not in (None, queued[iid]):
                    self.problem(f"{s.id}: turn {e['turn']} took input {iid} but sent "
                                 f"'{user.get(e['turn'])}', not '{queued[iid]}'")
        for iid, text in queued.items():
            if iid not in started and self.sent_prompts.get(text):
                self.problem(f"{s.id}: '{text}' is still queued ({iid}) but was sent "
                             f"{self.sent_prompts[text]} times")
        s.queue = (len(queued), len(started))

    def check_bound(self, s, k, t):
        """The turn's logged answer: a prefix of what was sent, holding all
        that was sent more than BOUND before the run last ran (Run.t_ran:
        the kill, or the stop before it)."""
        if getattr(k, "bound_checked", False) or k.request is None:
            return
        k.bound_checked = True
        full = "".join(deltas_of(k.length))
        logged = t["text"]
        if not full.startswith(logged):
            self.problem(f"{s.id}: turn {t['id']} logged text that was not sent: {logged[:80]!r}...")
            return
        if k.result and k.result.get("exit") == 0:
            if logged != full:
                self.problem(f"{s.id}: turn {t['id']} completed with {len(logged)} of {len(full)} characters")
            return
        sent = text_deltas(s.proto, self.fake.writes(k.request["n"]), k.t_kill)
        pos, lost_from = 0, None
        for tw, text in sent:
            pos += len(text)
            if pos > len(logged):
                lost_from = tw
                break
        lost = 0.0 if lost_from is None else max(0.0, k.run.t_ran - lost_from)
        if k.index == k.run.active:  # the reply the kill cut (those before it ended)
            self.lost_ms.append(lost * 1000)
        waited = k.run.waited(lost_from, k.run.t_ran) if lost_from is not None else 0.0  # a busy machine
        if lost > BOUND:
            self.max_waited = max(self.max_waited, min(waited, lost - BOUND))
        if lost > BOUND + waited:
            self.problem(f"{s.id}: turn {t['id']} ({k.phase}) lost text sent {lost * 1000:.0f} ms before "
                         f"the kill (bound {BOUND * 1000:.0f} ms, plus {waited * 1000:.0f} ms its threads "
                         f"waited for a CPU or a disk): {len(logged)} characters logged")

    def end_session(self, s):
        """The last word on a session: repaired by the next open, the next
        turn well formed, then listed as idle."""
        if s.id is None:
            return
        if not s.closed:
            self.close_and_continue(s, "on_open")
        self.sessions_done.append(s)
        self.queued["queued"] = self.queued.get("queued", 0) + s.queue[0]
        self.queued["started"] += s.queue[1]

    def final_checks(self):
        rc, out, err = self.cairn_run("sessions", "--json")
        problems = []
        if rc != 0:
            problems.append(f"sessions --json: exit {rc}: {err[:300]}")
        else:
            listed = {o["id"]: o for o in json.loads(out)}
            for s in self.sessions_done:
                o = listed.get(s.id)
                if o is None:
                    problems.append(f"session {s.id} is not listed")
                elif o["status"] != "idle":
                    problems.append(f"session {s.id} is listed as {o['status']}")
            known = {s.id for s in self.sessions_done}
            for sid in set(listed) - known:
                problems.append(f"a session no run made is listed: {sid} ({listed[sid]['status']})")
        for sid in self.session_dirs() - {s.id for s in self.sessions_done}:
            rc, out, err = self.cairn_run("inspect", "--json", sid)
            problems.append(f"a session no run owned: {sid}: exit {rc} {out[:200]} {err[:200]}")
        self.leftovers = self.session_dirs(with_log=False)
        for sid in self.leftovers:
            rc, out, err = self.cairn_run("inspect", "--json", sid)
            if rc != 3:
                problems.append(f"a folder without a log is not missing: {sid}: exit {rc} {out[:200]}")
        rc, out, err = self.cairn_run("doctor")
        if rc != 0 or out.count("leftover:") != len(self.leftovers):
            problems.append(f"doctor: exit {rc}, {out.count('leftover:')} leftovers reported, "
                            f"{len(self.leftovers)} found: {out[-300:]} {err[-300:]}")
        return problems

    # ---- the run ----

    def main(self):
        t0 = time.monotonic()
        targets = ["start", "start", "first_byte", "first_byte", "stream", "stream", "stream", "stream",
                   "settle", "settle"]
        allowed = set(targets) | {"between"}
        if os.environ.get("CRASH_TURN_TARGETS"):
            targets = os.environ["CRASH_TURN_TARGETS"].split(",")
            allowed = set(targets)
        self.session = None
        self.nsess = 0
        self.group = (1, 0, 0)  # the first kill of the TAP line's group, the torn tails before it
        while self.kills < self.kills_wanted:
            n, j, target = 1, 0, self.rng.choice(targets)
            if target == "between" or self.rng.random() < QUEUED:
                # Queued input: the kill in the turn of one of 2 or 3
                # prompts, or between one and the next.
                n = self.rng.choice([2, 3])
                j = self.rng.randrange(1 if target == "between" else 0, n)
                if j and "between" in allowed and (target == "start" or self.rng.random() < 0.5):
                    target = "between"
                elif j and target == "start":
                    j = 0
            self.one_run(target, n, j)
            if self.kills % GROUP == 0 or self.kills == self.kills_wanted:
                self.group_line()
        # Every phase a share of the kills. Random instants hit the short
        # phases by chance (a BEFORE save lasts one sync; a settlement 2-5
        # ms, which a loaded machine may not give this process in time), so
        # each phase still short of its share is aimed at, up to TRIES x
        # its quota runs: the aimed kills cannot miss, unless the promise
        # that the phase exists breaks (e.g. a run that settles without
        # writing its log). The long ones are hit often.
        k = self.kills
        need = {"before_ack": 1, "first_byte": max(1, k // 25), "stream": max(1, k // 10),
                "settle": max(1, k // 25), "between": max(1, k // 50)}
        aim = {"before_ack": "start", "first_byte": "first_byte", "stream": "stream", "settle": "settle",
               "between": "between"}
        random_phases = dict(self.phases)
        tries = {}
        for phase, quota in need.items():
            if aim[phase] not in allowed:
                continue
            while self.phases.get(phase, 0) < quota and tries.get(phase, 0) < TRIES * quota:
                tries[phase] = tries.get(phase, 0) + 1
                target = aim[phase]
                n = self.rng.choice([2, 3]) if target == "between" else \
                    1 if target == "start" else self.rng.choice([1, 1, 2, 3])
                j = self.rng.randrange(1, n) if target == "between" else \
                    n - 1 if target == "settle" else self.rng.randrange(n)
                self.one_run(target, n, j, aim=True)
        if self.kills > k:
            self.group_line(f"aimed at the phases short of their quota ({sum(tries.values())} runs)")
        if self.session is not None:
            self.end_session(self.session)
        extra = self.final_checks() + self.problems
        tap(not extra, f"{len(self.sessions_done)} sessions listed idle, no other; {len(self.leftovers)} "
            "folders without a log (kills during a first publication) are missing, doctor names them", extra)
        secs = time.monotonic() - t0
        ph = self.phases
        short = [f"{p}: {ph.get(p, 0)} < {n} kills landed there, {random_phases.get(p, 0)} of them at random "
                 f"and {ph.get(p, 0) - random_phases.get(p, 0)} of {tries.get(p, 0)} runs aimed at it"
                 for p, n in need.items() if ph.get(p, 0) < n]
        tap(not short, f"kills in every phase (quotas {', '.join(f'{p} {n}' for p, n in need.items())}): " +
            ", ".join(f"{p} {n}" for p, n in sorted(ph.items())) +
            (f"; at random: {', '.join(f'{p} {n}' for p, n in sorted(random_phases.items()))}, then "
             f"{self.kills - k} kills of {sum(tries.values())} aimed runs" if tries else ""), short)
        lost = sorted(self.lost_ms)
        q = (lambda f: lost[min(len(lost) - 1, int(f * len(lost)))]) if lost else (lambda f: 0)
        tap(not FAILED, f"crash summary (seed {self.seed}): {self.kills} kills ({self.kills - k} aimed) of "
            f"{self.runs} runs in {secs:.0f}s, {self.nsess} sessions, repairs {self.repairs}, {self.torn} torn "
            f"tails left by kills and {self.torn_made} appended; text lost "
            f"before a kill: median {q(0.5):.0f} ms, p90 {q(0.9):.0f} ms, max {q(1.0):.0f} ms "
            f"(bound {BOUND * 1000:.0f}, stretched by waits for a CPU or a disk by at most "
            f"{self.max_waited * 1000:.0f}); "
            f"{self.queued['runs']} runs of 2-3 prompts: "
            f"{self.queued['queued']} prompts queued, {self.queued['started']} of them started once, the others "
            "still queued and never sent")

    def one_run(self, target, n, j, aim=False):
        """A killed run on the current session (a new one after
        PER_SESSION kills), then the checks of its kill."""
        s = self.session
        if s is None or s.kills >= PER_SESSION:
            if s is not None:
                self.end_session(s)
            s = self.session = Session("openai" if self.nsess % 2 == 0 else "anthropic")
            self.nsess += 1
        before = self.kills
        run = self.run_killed(s, target, n, j, aim)
        if run is not None:
            s.killed.extend(run.prompts)
            if n > 1:
                self.queued["runs"] += 1
            if self.kills > before:
                self.after_kill(s, run)
            # else not killed (it finished first): its turn is checked with the next.

    def group_line(self, what=""):
        """The TAP line of the kills since the last one."""
        first, torn, made = self.group
        if self.kills < first:
            return
        desc = (f"kills {first}-{self.kills}{' ' + what if what else ''}: every session reopens, no acknowledged "
                f"event lost, the stream within {BOUND * 1000:.0f} ms, no queued prompt lost or sent twice, "
                "the next turn well formed "
                f"({self.torn - torn} torn tails left by kills, {self.torn_made - made} "
                "appended as a kill inside a write leaves them)")
        tap(not self.problems, desc, self.problems)
        self.problems = []
        self.group = (self.kills + 1, self.torn, self.torn_made)

    def cleanup(self):
        self.fake.stop()
        keep = os.environ.get("CRASH_TURN_KEEP")
        if FAILED and keep:
            shutil.copytree(self.tmp, os.path.join(keep, os.path.basename(self.tmp)))
            print(f"# kept in {os.path.join(keep, os.path.basename(self.tmp))}")
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    cairn = os.environ.get("CAIRN")
    if not cairn or not os.access(cairn, os.X_OK):
        tap(False, "the binary is built", [f"CAIRN={cairn}"])
        print(f"1..{N}")
        return 1
    seed = int(os.environ.get("CRASH_TURN_SEED") or time.time_ns() % 1000000007)
    kills = int(os.environ.get("CRASH_TURN_KILLS") or 100)
    c = Crash(os.path.abspath(cairn), seed, kills)
    try:
        c.main()
    finally:
        c.cleanup()
    print(f"1..{N}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
