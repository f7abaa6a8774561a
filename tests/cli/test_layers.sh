#!/usr/bin/env bash
# test_layers.sh — dependencies point down only: base → persist → sink →
# engine → tui → app. A file may include headers of its own layer and of
# the layers below it, never above; tui/ (the screen reads no file: the
# host gives it what it shows of a log, app/ writes its files) takes
# nothing from persist/ but the event vocabulary, persist/vocab.h. The
# same check run on a copy of the tree with a violation of each kind put
# in must find each.
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."

LAYERS=(base persist sink engine tui app)

rank() {
	local i
	for i in "${!LAYERS[@]}"; do
		[ "${LAYERS[$i]}" = "$1" ] && { echo "$i"; return; }
	done
	echo -1
}

# Every '#include "LAYER/…"' of the tree at $1 as "file header", one a line.
includes() {
	local d
	for d in "${LAYERS[@]}"; do
		(cd "$1" && grep -HoE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z]+/[^"]+"' "$d"/*.c "$d"/*.h 2>/dev/null) |
			sed -E 's/^([^:]+):.*"([^"]+)"/\1 \2/'
	done
}

# The violations of the tree at $1, one a line: "up: FILE includes HDR"
# (a layer above its own) or "tui: FILE includes HDR" (persist/ but the
# vocabulary).
violations() {
	local file hdr from to rt
	while read -r file hdr; do
		from=${file%%/*}
		to=${hdr%%/*}
		rt=$(rank "$to")
		[ "$rt" -lt 0 ] && continue # not a layer (tests/, a library's own folder)
		if [ "$rt" -gt "$(rank "$from")" ]; then
			echo "up: $file includes $hdr"
		fi
		if [ "$from" = tui ] && [ "$to" = persist ] && [ "$hdr" != persist/vocab.h ]; then
			echo "tui: $file includes $hdr"
		fi
	done < <(includes "$1")
}

n=$(includes . | wc -l)
check "the tree's own includes are found ($n)" test "$n" -gt 300
v=$(violations .)
mapfile -t up < <(grep '^up: ' <<<"$v")
mapfile -t tp < <(grep '^tui: ' <<<"$v")
if [ ${#up[@]} -eq 0 ]; then
	ok "no file includes a header from a layer above its own"
else
	not_ok "no file includes a header from a layer above its own" "${up[@]}"
fi
if [ ${#tp[@]} -eq 0 ]; then
	ok "tui/ includes nothing from persist/ but vocab.h"
else
	not_ok "tui/ includes nothing from persist/ but vocab.h" "${tp[@]}"
fi

# The check itself: a copy of the tree, each violation put in once.
mkdir -p "$T/tree"
for d in "${LAYERS[@]}"; do cp -r "$d" "$T/tree/"; done
printf '#include "tui/chat.h"\n' >>"$T/tree/engine/host_page.c"
printf '#include "app/parts.h"\n' >>"$T/tree/tui/chat_page.c"
printf '#include "persist/load_async.h"\n' >>"$T/tree/tui/chat_page.c"
printf '#include "persist/vocab.h"\n' >>"$T/tree/tui/chat.c"
# what the copy has that the tree had not
got=$(comm -13 <(sort <<<"$v") <(violations "$T/tree" | sort))
want=$(printf '%s\n' "up: engine/host_page.c includes tui/chat.h" \
	"up: tui/chat_page.c includes app/parts.h" \
	"tui: tui/chat_page.c includes persist/load_async.h" | sort)
if [ "$got" = "$want" ]; then
	ok "the check finds an include from a layer above, and tui/ taking persist/ but vocab.h"
else
	not_ok "the check finds an include from a layer above, and tui/ taking persist/ but vocab.h" \
		"found:" "$got" "wanted:" "$want"
fi
finish
