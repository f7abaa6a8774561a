#!/usr/bin/env bash
# The fake model server the engine's tests talk to, held to its own claims
# (tests/fake/test_fake_model.py prints the TAP lines).
set -u
cd "$(dirname "$0")/../.."
exec python3 tests/fake/test_fake_model.py
