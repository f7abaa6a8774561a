#!/usr/bin/env bash
# test_layers.sh — dependencies point down only: base → persist → sink →
# engine → tui → app. A file may include headers of its own layer and of
# the layers below it, never above; tui/ (the screen reads no file) takes
# nothing from persist/ but the event vocabulary, persist/vocab.h, and the
# headers still listed in TUI_PERSIST_LEFT below, each to go when the host
# gives the screen what it reads there (a page of earlier turns). The list
# only shrinks: a header listed that tui/ no longer includes fails too.
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."

LAYERS=(base persist sink engine tui app)
TUI_PERSIST_LEFT=(persist/load_async.h persist/pathkey.h)

rank() {
	local i
	for i in "${!LAYERS[@]}"; do
		[ "${LAYERS[$i]}" = "$1" ] && { echo "$i"; return; }
	done
	echo -1
}

# Every '#include "LAYER/…"' of the tree as "file header", one a line.
includes() {
	local d
	for d in "${LAYERS[@]}"; do
		grep -HoE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z]+/[^"]+"' "$d"/*.c "$d"/*.h 2>/dev/null |
			sed -E 's/^([^:]+):.*"([^"]+)"/\1 \2/'
	done
}

up=()
tui_persist=()
while read -r file hdr; do
	from=${file%%/*}
	to=${hdr%%/*}
	rt=$(rank "$to")
	[ "$rt" -lt 0 ] && continue # not a layer (tests/, a library's own folder)
	if [ "$rt" -gt "$(rank "$from")" ]; then
		up+=("$file includes $hdr")
	fi
	if [ "$from" = tui ] && [ "$to" = persist ] && [ "$hdr" != persist/vocab.h ]; then
		tui_persist+=("$hdr")
	fi
done < <(includes)

n=$(includes | wc -l)
check "the tree's own includes are found ($n)" test "$n" -gt 300
if [ ${#up[@]} -eq 0 ]; then
	ok "no file includes a header from a layer above its own"
else
	not_ok "no file includes a header from a layer above its own" "${up[@]}"
fi

extra=()
for h in $(printf '%s\n' "${tui_persist[@]}" | sort -u); do
	keep=0
	for l in "${TUI_PERSIST_LEFT[@]}"; do [ "$h" = "$l" ] && keep=1; done
	[ $keep -eq 1 ] || extra+=("tui/ includes $h")
done
if [ ${#extra[@]} -eq 0 ]; then
	ok "tui/ includes nothing from persist/ but vocab.h and the headers listed"
else
	not_ok "tui/ includes nothing from persist/ but vocab.h and the headers listed" "${extra[@]}"
fi

gone=()
for l in "${TUI_PERSIST_LEFT[@]}"; do
	printf '%s\n' "${tui_persist[@]}" | grep -qxF "$l" || gone+=("$l is no longer included by tui/: take it off the list")
done
if [ ${#gone[@]} -eq 0 ]; then
	ok "every header listed is still included by tui/ (the list only shrinks)"
else
	not_ok "every header listed is still included by tui/ (the list only shrinks)" "${gone[@]}"
fi
finish
