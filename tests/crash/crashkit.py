"""crashkit.py — what the crash tests' drivers share around a run: the
binary checked, the seed and the number of kills from the environment, the
plan line, a run's directories and environment (the fake model server
for both providers), and a failing run's data kept. (crash_turn.py still
has its own copy of these; it can call them too.)"""
import os
import random
import shutil
import tempfile
import time

import crash_turn
from crash_turn import tap


def run_main(make, prefix, default_kills):
    """Build a driver with make(cairn, seed, kills) from $CAIRN,
    ${prefix}_SEED (default: from the clock) and ${prefix}_KILLS, run its
    main(), always its cleanup(); print the TAP plan. Returns the exit code."""
    cairn = os.environ.get("CAIRN")
    if not cairn or not os.access(cairn, os.X_OK):
        tap(False, "the binary is built", [f"CAIRN={cairn}"])
    else:
        seed = int(os.environ.get(f"{prefix}_SEED") or time.time_ns() % 1000000007)
        kills = int(os.environ.get(f"{prefix}_KILLS") or default_kills)
        c = make(os.path.abspath(cairn), seed, kills)
        try:
            c.main()
        finally:
            c.cleanup()
    print(f"1..{crash_turn.N}")
    return 1 if crash_turn.FAILED else 0


def keep_failed(tmp, prefix):
    """After a failed run, copy tmp into ${prefix}_KEEP (when set); then remove it."""
    keep = os.environ.get(f"{prefix}_KEEP")
    if crash_turn.FAILED and keep:
        shutil.copytree(tmp, os.path.join(keep, os.path.basename(tmp)))
        print(f"# kept in {os.path.join(keep, os.path.basename(tmp))}")
    shutil.rmtree(tmp, ignore_errors=True)


def setup(d, cairn, seed, kills, name, make_fake):
    """Give driver d what every run has: cairn, seed, rng, kills_wanted, tmp
    (a new directory named after name), data, work, the fake server
    make_fake(tmp) and env (both providers pointed at it, the test keys,
    no CAIRN_HOME)."""
    d.cairn, d.seed, d.rng, d.kills_wanted = cairn, seed, random.Random(seed), kills
    d.tmp = tempfile.mkdtemp(prefix=f"{name}-")
    d.data = os.path.join(d.tmp, "data")
    d.work = os.path.join(d.tmp, "work")
    os.makedirs(d.work)
    d.fake = make_fake(d.tmp)
    base = f"http://127.0.0.1:{d.fake.port}"
    d.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(d.tmp, "config"),
                 OPENAI_BASE_URL=base + "/v1", OPENAI_API_KEY="sk-test",
                 ANTHROPIC_BASE_URL=base, ANTHROPIC_API_KEY="ant-test")
    d.env.pop("CAIRN_HOME", None)
