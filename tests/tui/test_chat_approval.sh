#!/usr/bin/env bash
# Keys typed before an approval prompt appeared never answer it: a 'y'
# typed right after Enter lands in the composer, the call still waits;
# 'd' then takes a note for the model, Enter denies with it.
. "$(dirname "$0")/lib.sh"
printf '{"providers": {"offline": {"pace_ms": 0}}}\n' >"$T/config/cairn/config.json"
start a
wait_for a "^ idle" >/dev/null
keys a "run touch early-yes" Enter y
check "the call waits for its answer" wait_for a "^ approval"
check "... the question names the tool once: allow shell: touch early-yes ?" wait_for a "^  allow shell: touch early-yes \\?$"
check "... the 'y' typed before the prompt is in the composer, not an answer" wait_for a "^> y$"
sleep 0.3
check "... and nothing ran" test ! -e "$T/work/early-yes"
keys a d
check "d asks for a note" wait_for a "type the note for the model"
keys a "not in this directory" Enter
check "... Enter denies with it: the model reads the note" wait_for a "not in this directory"
check "... nothing ran" test ! -e "$T/work/early-yes"
ID=$("$CAIRN" --data-dir "$DATA" sessions --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
check "... the answer is in the log: deny, by the user, with the note" \
	bash -c "'$CAIRN' --data-dir '$DATA' log cat $ID | grep interaction/answer | grep '\"decision\":\"deny\"' | grep -q 'not in this directory'"
finish
