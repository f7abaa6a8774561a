#!/usr/bin/env bash
# Headless turns with tools killed with SIGKILL while the agent loop runs:
# while a slow shell command runs, before a call started, at random
# instants (tests/crash/crash_tools.py prints the TAP lines; its header says
# what is checked). CRASH_TOOLS_KILLS sets the number of kills (default
# 24); CRASH_TOOLS_SEED replays a run.
set -u
: "${CAIRN:?run through tests/run.sh or set CAIRN to the binary}"
cd "$(dirname "$0")/../.."
exec python3 tests/crash/crash_tools.py
