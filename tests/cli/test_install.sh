#!/usr/bin/env bash
# make install honours PREFIX and DESTDIR, and the installed binary runs.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
dest="$T/dest"
if make -s -C "$top" BUILD="${CAIRN_BUILD#"$top"/}" install PREFIX=/opt/cairn DESTDIR="$dest" >"$T/make.log" 2>&1; then
	ok "make install PREFIX=/opt/cairn DESTDIR=…"
else
	not_ok "make install PREFIX=/opt/cairn DESTDIR=…" "$(tail -5 "$T/make.log")"
fi
check "binary installed under DESTDIR/PREFIX/bin" test -x "$dest/opt/cairn/bin/cairn"
check "man page installed under DESTDIR/PREFIX/share/man/man1" test -f "$dest/opt/cairn/share/man/man1/cairn.1"
check "nothing installed outside DESTDIR/PREFIX" test "$(find "$dest" -type f | grep -vc "^$dest/opt/cairn/")" -eq 0
expect_code 0 "installed binary prints its version" "$dest/opt/cairn/bin/cairn" --version
check "version line names cairn" grep -q '^cairn [0-9]' <<<"$OUT"
finish
