#!/usr/bin/env bash
# Headless turns killed with SIGKILL at random instants against a slow
# stream from the fake model server, then kills aimed at any phase short of
# its quota (tests/crash/crash_turn.py prints the TAP lines; its header says
# what is checked). CRASH_TURN_KILLS=1000 is the long run (default 100);
# CRASH_TURN_SEED replays a run.
set -u
: "${CAIRN:?run through tests/run.sh or set CAIRN to the binary}"
cd "$(dirname "$0")/../.."
exec python3 tests/crash/crash_turn.py
