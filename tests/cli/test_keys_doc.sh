#!/usr/bin/env bash
# docs/keys.md is what the key table (tui/keytab.c) makes of itself: a key
# added, changed or removed in the table without the page fails here.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
gen="$CAIRN_BUILD/tests/test_keytab"
check "the key table's page generator is built" test -x "$gen"
"$gen" --markdown >"$T/keys.md"
if diff -u "$top/docs/keys.md" "$T/keys.md" >"$T/diff"; then
	ok "docs/keys.md matches the key table"
else
	not_ok "docs/keys.md matches the key table" \
		"regenerate: build/tests/test_keytab --markdown > docs/keys.md" "$(head -40 "$T/diff")"
fi
finish
